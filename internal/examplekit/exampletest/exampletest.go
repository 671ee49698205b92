// Package exampletest is the test harness both example programs share: it
// runs the program in process through its [examplekit.Program], or as a
// real process (the test binary re-executing main, so nothing is built),
// and reads its "key: value" report lines.
//
//	func TestMain(m *testing.M) { exampletest.Main(m, main) }
//
//	p := exampletest.Start(t, "-quiet")
//	code, out := p.Wait(t)
//	if exampletest.ReportLine(t, out, "lost:") != "0" { ... }
package exampletest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/examplekit"
)

// WaitFor bounds how long a test waits for something that should happen
// within a few seconds; it only limits a failing test.
const WaitFor = 30 * time.Second

// runMainEnv, set to 1, makes the test binary run the program's main instead
// of the tests.
const runMainEnv = "SPATE_EXAMPLE_TEST_RUN_MAIN"

// Main is an example test package's TestMain: started by [Start] it runs
// the program's main, otherwise the tests.
func Main(m *testing.M, main func()) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// Buffer is a bytes.Buffer safe for concurrent writers (a program's
// display and its event log).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Process is one run of the program as a process of its own.
type Process struct {
	Cmd            *exec.Cmd
	Stdout, Stderr Buffer
}

// Start starts the program (the test binary running main) with args and
// env added to the test's environment; the test's end kills it.
func Start(t testing.TB, args []string, env ...string) *Process {
	t.Helper()
	p := &Process{}
	p.Cmd = exec.CommandContext(t.Context(), os.Args[0], args...)
	p.Cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Stdout, &p.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Wait waits for the process to exit and returns its exit status (-1 when a
// signal killed it) and its standard output followed by its standard error.
func (p *Process) Wait(t testing.TB) (int, string) {
	t.Helper()
	err := p.Cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return p.Cmd.ProcessState.ExitCode(), p.Stdout.String() + p.Stderr.String()
}

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond until it holds, failing the test with what once
// WaitFor has passed.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ReportLine returns the value of the first line of out that starts with
// key, trimmed; it fails the test when there is none.
func ReportLine(t testing.TB, out, key string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %q line in:\n%s", key, out)
	return ""
}

// BadFlag is one flag mistake and what the program must say about it.
type BadFlag struct {
	Name string
	Args []string
	Want string // in standard error, beside the usage
}

// Run runs program in process with args and returns its exit status,
// standard output and standard error.
func Run(ctx context.Context, program examplekit.Program, args ...string) (code int, stdout, stderr string) {
	var out, errs Buffer
	code = program(ctx, args, &out, &errs)
	return code, out.String(), errs.String()
}

// CheckBadFlags runs program with each row's arguments: each must exit
// ExitBadFlags, print the row's message and the usage (starting "usage:
// name") to standard error, and nothing to standard output.
func CheckBadFlags(t *testing.T, program examplekit.Program, name string, rows []BadFlag) {
	t.Helper()
	for _, tt := range rows {
		t.Run(tt.Name, func(t *testing.T) {
			code, stdout, stderr := Run(t.Context(), program, tt.Args...)
			if code != examplekit.ExitBadFlags {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, examplekit.ExitBadFlags, stderr)
			}
			if !strings.Contains(stderr, tt.Want) || !strings.Contains(stderr, "usage: "+name) {
				t.Fatalf("stderr lacks %q and the usage:\n%s", tt.Want, stderr)
			}
			if stdout != "" {
				t.Fatalf("wrote to stdout: %s", stdout)
			}
		})
	}
}

// CheckHelp runs program with -h: it must exit 0 and list the flags,
// flag among them, on standard error.
func CheckHelp(t *testing.T, program examplekit.Program, flag string) {
	t.Helper()
	code, _, stderr := Run(t.Context(), program, "-h")
	if code != examplekit.ExitOK {
		t.Fatalf("-h: exit %d, want 0", code)
	}
	if !strings.Contains(stderr, flag) {
		t.Fatalf("-h lacks %s:\n%s", flag, stderr)
	}
}
