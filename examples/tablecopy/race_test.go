//go:build race

package main

// fleetRows is the size of the in-process fleet test's table: the race
// detector slows the pure-Go SQLite down about fiftyfold.
const fleetRows = 20_000
