package main

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
)

// waitFor bounds how long a test waits for something that should happen
// within a few seconds; it only limits a failing test.
const waitFor = 30 * time.Second

// runMainEnv, set to 1, makes the test binary run main instead of the
// tests, so a test can start the program as a process of its own without
// building it.
const runMainEnv = "BACKFILL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// buffer is a bytes.Buffer safe for concurrent writers.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// process is one run of the program as a process of its own.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr buffer
}

// start starts the program with args; the test's end kills it.
func start(t testing.TB, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.CommandContext(t.Context(), os.Args[0], args...)}
	p.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// wait waits for the process and returns its exit status (-1 when a signal
// killed it) and its standard output followed by its standard error.
func (p *process) wait(t testing.TB) (int, string) {
	t.Helper()
	var exit *exec.ExitError
	if err := p.cmd.Wait(); err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode(), p.stdout.String() + p.stderr.String()
}

// signal sends sig to the process.
func (p *process) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// runInProcess runs the program in process and returns its exit status,
// standard output and standard error.
func runInProcess(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errs buffer
	code = run(ctx, args, &out, &errs)
	return code, out.String(), errs.String()
}

// eventually polls cond until it holds, failing the test with what once
// waitFor has passed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling another process's progress: nothing to wait on
	}
}

// reportLine returns the value of the first line of out that starts with
// key, trimmed; it fails the test when there is none.
func reportLine(t testing.TB, out, key string) string {
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

// embeddedT starts an embedded NATS server for the test, its store in a
// temporary directory, stopped at cleanup.
func embeddedT(t testing.TB) *embedded {
	t.Helper()
	e, err := startEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

// ledgerT opens job's ledger on the NATS server at url, closed at cleanup.
func ledgerT(t testing.TB, url, job string) *ledger {
	t.Helper()
	st, err := (&stores{nats: url}).open(ledgerJob(job), false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := openLedger(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}
