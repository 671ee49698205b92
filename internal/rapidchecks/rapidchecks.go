// Package rapidchecks sets how many checks a rapid property runs by default,
// for the tests whose every check runs a whole job.
package rapidchecks

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Default sets rapid's -rapid.checks to n for t unless the command line or
// RAPID_CHECKS set it; the old value comes back when t ends.
func Default(t *testing.T, n int) {
	t.Helper()
	if _, ok := os.LookupEnv("RAPID_CHECKS"); ok {
		return
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	fl := flag.Lookup("rapid.checks")
	if set || fl == nil {
		return
	}
	old := fl.Value.String()
	if err := fl.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatalf("set -rapid.checks: %v", err)
	}
	t.Cleanup(func() { _ = fl.Value.Set(old) })
}
