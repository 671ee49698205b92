package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/spate-go/coordination/internal/coordctl"
	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/internal/examplekit/exampletest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
)

// ledgerPermissions are what the example's own sink, its ledger bucket,
// adds to the worker set: the example is a worker plus that.
func ledgerPermissions(job string) []string {
	stream := "KV_" + ledgerBucket(job)
	return []string{
		"$JS.API.STREAM.INFO." + stream, "$JS.API.STREAM.CREATE." + stream, "$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.DIRECT.GET." + stream + ".>",
		"$JS.API.CONSUMER.CREATE." + stream + ".>", "$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$KV." + ledgerBucket(job) + ".>",
	}
}

// TestTheREADMEPermissionsSuffice runs a server whose only users are the
// README's permission sets, for the README's job and for another: the main
// example runs the job with the worker set, coordctl status and audit read
// it with the read-only set, and neither the other job's worker nor the
// read-only user can read or write what they are not given.
func TestTheREADMEPermissionsSuffice(t *testing.T) {
	t.Parallel()
	const job, other = embednats.ReadmeJob, "other-job"
	var users []*server.User
	for _, j := range []string{job, other} {
		u, err := embednats.ReadmeUsers("../../docs/nats.md", j, "worker-pw", "ops-pw")
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u...)
	}
	users[0].Permissions.Publish.Allow = append(users[0].Permissions.Publish.Allow, ledgerPermissions(job)...)
	// The README's operator who may delete the job: the worker set plus
	// the deletion of the job's two streams.
	deleter := &server.User{Username: job + "-deleter", Password: "deleter-pw", Permissions: &server.Permissions{
		Publish: &server.SubjectPermission{Allow: append(slices.Clone(users[0].Permissions.Publish.Allow),
			"$JS.API.STREAM.DELETE.KV_coordination_"+job+"_state", "$JS.API.STREAM.DELETE.KV_coordination_"+job+"_lease")},
		Subscribe: users[0].Permissions.Subscribe,
	}}
	users = append(users, deleter)
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
	worker, ops, otherWorker := url(job+"-worker", "worker-pw"), url(job+"-ops", "ops-pw"), url(other+"-worker", "worker-pw")

	// The example as one worker process of the job (-instance), which
	// audits the job at its end.
	var out, errb exampletest.Buffer
	code := run(t.Context(), jobArgs(worker, job, "-instance", "a", "-quiet"), &out, &errb)
	if code != 0 || exampletest.ReportLine(t, out.String(), "lost:") != "0" {
		t.Fatalf("the example with the worker set exited %d; want 0 and nothing lost\n%s%s", code, out.String(), errb.String())
	}
	for _, cmd := range [][]string{{"status", "-splits"}, {"audit"}} {
		var cout, cerr bytes.Buffer
		if code := coordctl.Run(t.Context(), append(cmd, "-nats", ops, "-job", job), &cout, &cerr); code != coordctl.ExitOK {
			t.Fatalf("coordctl %s with the read-only set: exit %d\n%s%s", cmd[0], code, cout.String(), cerr.String())
		}
	}
	// The server refused nothing: a refused request would only time out,
	// and be retried until it no longer mattered.
	if v := violations.Seen(); len(v) > 0 {
		t.Fatalf("the worker and read-only sets were refused requests:\n%s", strings.Join(v, "\n"))
	}

	// What the sets do not grant is refused by the server; each attempt
	// then times out at the client.
	read := func(ctx context.Context, st *natsstore.Store) error {
		_, err := st.List(ctx, store.Durable, "")
		return err
	}
	write := func(ctx context.Context, st *natsstore.Store) error {
		_, _, err := st.Create(ctx, store.Durable, "planted", []byte("x"))
		return err
	}
	var attempts sync.WaitGroup
	for _, a := range []struct {
		what, url, job string
		op             func(context.Context, *natsstore.Store) error
	}{
		{"a read of the job by another job's worker", otherWorker, job, read},
		{"a write to the job by another job's worker", otherWorker, job, write},
		{"a write by the read-only user", ops, job, write},
		{"a read of another job by the read-only user", ops, other, read},
	} {
		attempts.Go(func() {
			st, err := natsstore.New(natsstore.Config{Servers: []string{a.url}, Job: a.job}, leaseDuration)
			if err != nil {
				t.Error(err)
				return
			}
			defer st.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			if err := a.op(ctx, st); err == nil {
				t.Errorf("%s succeeded", a.what)
			}
		})
	}
	attempts.Wait()
	for _, user := range []string{other + "-worker", job + "-ops"} {
		if !violations.Refused(user) {
			t.Errorf("the server refused %s nothing: %q", user, violations.Seen())
		}
	}

	// Nor can another job's worker listen to this job's replies.
	nc, err := nats.Connect(otherWorker, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync(natsstore.InboxPrefix(job) + ".>"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server refusing another job's worker the job's inbox", func() bool {
		return errors.Is(nc.LastError(), nats.ErrPermissionViolation)
	})

	var dout, derr bytes.Buffer
	if code := coordctl.Run(t.Context(), []string{"delete-job", "-yes", "-nats", url(job+"-deleter", "deleter-pw"), "-job", job}, &dout, &derr); code != coordctl.ExitOK {
		t.Fatalf("coordctl delete-job with the worker set and the streams' deletion: exit %d\n%s%s", code, dout.String(), derr.String())
	}
	if violations.Refused(job + "-deleter") {
		t.Fatalf("delete-job was refused requests: %q", violations.Seen())
	}
}
