//go:build !race

package main

// fleetRows is the size of the in-process fleet test's table.
const fleetRows = 50_000
