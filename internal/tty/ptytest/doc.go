// Package ptytest opens pseudo-terminals for tests of what a command writes
// to a terminal (Linux only; elsewhere [Open] skips the test).
package ptytest
