package main

import (
	"os"
	"testing"
)

// The example end to end on a throwaway server, at a size CI affords: a
// worker killed at a third, two joining at half, and the sink checked by
// SQL (run reports ok only when no row is missing or duplicated).
func TestCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server and a fleet")
	}
	srv, err := startServer()
	switch {
	case err != nil && os.Getenv("SPATE_REQUIRE_POSTGRES") != "": // CI always runs it
		t.Fatal(err)
	case err != nil:
		t.Skip(err)
	}
	defer srv.remove()
	ok, err := run(srv.dsn(), 60_000, 4, 200, 16, false)
	if err != nil || !ok {
		t.Fatalf("run: ok %v, err %v; want every row copied exactly once", ok, err)
	}
}

// The report counts its workers in good English ("1 worker", not "1 workers").
func TestPluralCountsWorkers(t *testing.T) {
	for n, want := range map[int]string{1: "1 worker", 2: "2 workers", 0: "0 workers"} {
		if got := plural(n, "worker"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}
