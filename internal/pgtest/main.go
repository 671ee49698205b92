package pgtest

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

// Main is a TestMain body: it starts one server shared by the package's
// tests into *srv, runs m, removes the server and returns m's exit code.
// When no server binaries are found, *srv stays nil and the tests that call
// [Need] skip, unless RequireEnv is set, which makes it a failure.
func Main(m *testing.M, srv **Server, settings ...string) int {
	s, err := Start(settings...)
	switch {
	case errors.Is(err, ErrNoBinaries) && os.Getenv(RequireEnv) == "":
		fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL tests skip: %v\n", err)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	default:
		*srv = s
		defer s.Remove()
	}
	return m.Run()
}

// Need returns srv, or skips t naming what to install when srv is nil (no
// server binaries were found).
func Need(t testing.TB, srv *Server) *Server {
	t.Helper()
	if srv == nil {
		t.Skip("no PostgreSQL server binaries found; " + InstallHint)
	}
	return srv
}

// names numbers the names UniqueName hands out in this process.
var names atomic.Int64

// UniqueName returns prefix followed by a number unique in this process,
// for a job or database of one test on a shared server.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, names.Add(1))
}

// StartT starts a server of t's own (for a test that stops or kills it)
// and removes it when t ends. When no server binaries are found it skips t
// naming what to install, or fails it when RequireEnv is set.
func StartT(t testing.TB, settings ...string) *Server {
	t.Helper()
	s, err := Start(settings...)
	switch {
	case errors.Is(err, ErrNoBinaries) && os.Getenv(RequireEnv) == "":
		t.Skip("no PostgreSQL server binaries found; " + InstallHint)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	return s
}
