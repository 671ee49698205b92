package e2e

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination/internal/coordctl"
	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/internal/pgtest"
)

// The main example (examples/backfill) may import no internal package, so
// its tests that need one (a throwaway PostgreSQL server, the README's
// permission sets, coordctl) live here and run the example's binary.

// backfillBinary builds examples/backfill into the test's temporary
// directory and returns its path.
func backfillBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "backfill")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/backfill").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/backfill: %v\n%s", err, out)
	}
	return bin
}

// runBackfill runs the example's binary with args to the end and returns
// its exit status and its standard output followed by standard error.
func runBackfill(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String() + errs.String()
}

// reportLine returns the value of out's first line starting with key, or
// "" when there is none.
func reportLine(out, key string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestBackfillProcessesDivideOneJobOnPostgres runs two processes of the
// main example, -instance a and -instance b, on one PostgreSQL database:
// both finish with status 0 and lose nothing, coordctl audit finds the
// fence held, and a -verify run proves from the ledger alone that nothing
// was lost.
func TestBackfillProcessesDivideOneJobOnPostgres(t *testing.T) {
	bin := backfillBinary(t)
	srv := pgtest.StartT(t)
	args := []string{"-postgres", srv.DSN("postgres"), "-job", "divide", "-splits", "8", "-records", "10000", "-pace", "500", "-log", "off", "-quiet"}
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			code, out := runBackfill(t, bin, append(args, "-instance", name)...)
			t.Logf("instance %s:\n%s", name, out)
			if code != 0 || reportLine(out, "lost:") != "0" || reportLine(out, "this process:") == "0 deliveries" {
				t.Errorf("instance %s exited %d; want 0, lost: 0 and a part of the job delivered", name, code)
			}
		})
	}
	wg.Wait()
	var aout, aerr bytes.Buffer
	if code := coordctl.Run(t.Context(), []string{"audit", "-store", srv.DSN("postgres"), "-job", "divide"}, &aout, &aerr); code != coordctl.ExitOK {
		t.Fatalf("coordctl audit: exit %d\n%s%s", code, aout.String(), aerr.String())
	}
	code, out := runBackfill(t, bin, append(args, "-verify")...)
	if code != 0 || reportLine(out, "lost:") != "0" {
		t.Fatalf("-verify exited %d; want 0 and lost: 0\n%s", code, out)
	}
}

// TestBackfillRunsWithTheREADMEPermissions runs the main example as one
// worker process of the README's job, on a server whose user has the
// README's worker set for the job and for its ledger (the job
// <job>_ledger): it must complete with nothing refused, and coordctl status
// and audit must read the job with the README's read-only set.
func TestBackfillRunsWithTheREADMEPermissions(t *testing.T) {
	t.Parallel()
	const job = embednats.ReadmeJob
	users, err := embednats.ReadmeUsers("../../docs/nats.md", job, "worker-pw", "ops-pw")
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := embednats.ReadmeUsers("../../docs/nats.md", job+"_ledger", "worker-pw", "ops-pw")
	if err != nil {
		t.Fatal(err)
	}
	worker := users[0]
	worker.Permissions.Publish.Allow = append(slices.Clone(worker.Permissions.Publish.Allow), ledger[0].Permissions.Publish.Allow...)
	worker.Permissions.Subscribe.Allow = append(slices.Clone(worker.Permissions.Subscribe.Allow), ledger[0].Permissions.Subscribe.Allow...)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	violations := &embednats.ViolationLog{}
	srv.SetLogger(violations, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(srv.Shutdown)
	url := func(user, password string) string {
		return strings.Replace(srv.ClientURL(), "nats://", "nats://"+user+":"+password+"@", 1)
	}
	code, out := runBackfill(t, backfillBinary(t), "-nats", url(job+"-worker", "worker-pw"), "-job", job, "-instance", "a", "-splits", "8", "-records", "10000", "-pace", "1000", "-quiet")
	if code != 0 || reportLine(out, "lost:") != "0" {
		t.Fatalf("the example with the worker sets exited %d; want 0 and nothing lost\n%s", code, out)
	}
	for _, cmd := range [][]string{{"status", "-splits"}, {"audit"}} {
		var cout, cerr bytes.Buffer
		if code := coordctl.Run(t.Context(), append(cmd, "-nats", url(job+"-ops", "ops-pw"), "-job", job), &cout, &cerr); code != coordctl.ExitOK {
			t.Fatalf("coordctl %s with the read-only set: exit %d\n%s%s", cmd[0], code, cout.String(), cerr.String())
		}
	}
	// The server refused nothing: a refused request would only time out,
	// and be retried until it no longer mattered.
	if v := violations.Seen(); len(v) > 0 {
		t.Fatalf("the worker and read-only sets were refused requests:\n%s", strings.Join(v, "\n"))
	}
}

// TestBackfillSaysHowToRemoveWhatItLeaves runs one worker process of the
// main example on PostgreSQL, which leaves its job and its ledger (a job
// of its own) for -verify: the report's "kept:" line names both coordctl
// delete-job commands, and running them leaves no schema of the job
// behind (coordctl delete-job of the job alone left the ledger's schema).
func TestBackfillSaysHowToRemoveWhatItLeaves(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	dsn := srv.DSN("postgres")
	code, out := runBackfill(t, backfillBinary(t), "-postgres", dsn, "-job", "kept", "-instance", "a", "-splits", "4", "-records", "2000", "-pace", "2000", "-log", "off", "-quiet")
	if code != 0 || reportLine(out, "lost:") != "0" {
		t.Fatalf("the worker exited %d; want 0 and lost: 0\n%s", code, out)
	}
	kept := reportLine(out, "kept:")
	cmds := regexp.MustCompile(`coordctl -store '([^']*)' -job (\S+) delete-job -yes`).FindAllStringSubmatch(kept, -1)
	if len(cmds) != 2 || cmds[0][2] != "kept" || cmds[1][2] != "kept_ledger" {
		t.Fatalf("the report does not name coordctl delete-job for the job and its ledger:\n%s", out)
	}
	for _, c := range cmds {
		var cout, cerr bytes.Buffer
		if code := coordctl.Run(t.Context(), []string{"-store", c[1], "-job", c[2], "delete-job", "-yes"}, &cout, &cerr); code != coordctl.ExitOK {
			t.Fatalf("coordctl delete-job -job %s: exit %d\n%s%s", c[2], code, cout.String(), cerr.String())
		}
	}
	var left int
	if err := srv.QueryRowOn(t.Context(), "postgres", "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'coordination_kept%'", nil, &left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d schemas of the job are left after the report's commands", left)
	}
}

// TestBackfillBlamesAMissingDatabaseGrantOnTheDatabase runs the main
// example as a role that may connect to the database but not create
// schemas in it: it fails naming the database privilege, with no advice
// about a server that is down or about NATS.
func TestBackfillBlamesAMissingDatabaseGrantOnTheDatabase(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	for _, sql := range []string{
		"CREATE ROLE nocreate LOGIN",
		"CREATE DATABASE work",
		"REVOKE CONNECT, CREATE ON DATABASE work FROM PUBLIC",
		"GRANT CONNECT ON DATABASE work TO nocreate",
	} {
		if err := srv.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	dsn := strings.Replace(srv.DSN("work"), "postgres://postgres@", "postgres://nocreate@", 1)
	code, out := runBackfill(t, backfillBinary(t), "-postgres", dsn, "-instance", "a", "-splits", "4", "-records", "2000", "-log", "off", "-quiet")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"permission denied for database work", "on the database (CONNECT, or CREATE"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"is the server up", "NATS", "may have landed"} {
		if strings.Contains(out, bad) {
			t.Errorf("the failure says %q:\n%s", bad, out)
		}
	}
}
