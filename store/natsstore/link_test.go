package natsstore

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// countLines returns how many lines of logs contain msg.
func countLines(logs, msg string) int {
	n := 0
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, msg) {
			n++
		}
	}
	return n
}

// linkDown reports whether st has recorded the loss of its connection.
func linkDown(st *Store) bool {
	st.mu.Lock()
	c := st.conn
	st.mu.Unlock()
	return c != nil && c.link.downFor() != ""
}

// blip stops srv's server, waits down, and starts it again on the same
// port and store directory; it returns the new server once it is ready.
func blip(t *testing.T, srv *server.Server, opts *server.Options, down time.Duration, during func()) *server.Server {
	t.Helper()
	srv.Shutdown()
	srv.WaitForShutdown()
	timer := time.NewTimer(down)
	if during != nil {
		during()
	}
	<-timer.C
	return runServer(t, opts)
}

// usableWithin polls a Get of key until it succeeds and returns how long
// that took; it fails after limit.
func usableWithin(t *testing.T, st *Store, key string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, limit, "the store to be usable after the restart", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, ok, err := st.Get(ctx, store.Durable, key)
		return err == nil && ok
	})
	return time.Since(start)
}

func TestOneSecondBlipCostsLessThanALease(t *testing.T) {
	t.Parallel() // waits in real time
	opts := serverOptions(t.TempDir())
	opts.SyncAlways = true
	opts.Authorization = urlToken
	srv := runServer(t, opts)
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	var logs syncBuffer
	st := newStore(t, Config{Servers: []string{tokenURL(srv)}, Job: "blip", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mustCreate(t, st, store.Durable, "before", "v")

	lost := time.Now()
	var shortErr error
	var shortTook time.Duration
	held := make(chan error, 1)
	srv = blip(t, srv, opts, time.Second, func() {
		// An operation issued during the outage is held, not refused at
		// once, and gives up with its context having sent nothing.
		waitFor(t, time.Second, "the store to notice the loss", func() bool { return linkDown(st) })
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, shortErr = st.Create(ctx, store.Durable, "short", []byte("v"))
		shortTook = time.Since(start)
	})
	// One issued just before the server is back, with the longest
	// OpTimeout a 2s lease allows, waits for the reconnect and lands.
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), testLease/2)
		defer cancel()
		_, ok, err := st.Create(ctx, store.Durable, "held", []byte("v"))
		if err == nil && !ok {
			err = coordination.Errorf(coordination.Fatal, "create of a new key lost")
		}
		held <- err
	}()
	ready := time.Now()
	took := usableWithin(t, st, "before", testLease)
	t.Logf("1s outage: usable %s after the server was ready, %s after the loss (lease %s)", took, time.Since(lost), testLease)
	if took > testLease/3 {
		t.Errorf("usable again %s after the server was back; want within a third of the %s lease", took, testLease)
	}
	if total := ready.Add(took).Sub(lost); total >= testLease {
		t.Errorf("a 1s outage kept the store unusable for %s, a whole %s lease", total, testLease)
	}

	wantKind(t, shortErr, coordination.Retryable, "not connected to NATS (", "reconnecting); nothing was sent", "context deadline exceeded")
	if shortTook < 90*time.Millisecond {
		t.Errorf("an operation during the outage failed after %s instead of waiting for its context", shortTook)
	}
	if err := <-held; err != nil {
		t.Errorf("an operation held across the reconnect: %v", err)
	}
	if _, ok, err := st.Get(opCtx(t), store.Durable, "short"); ok || err != nil {
		t.Errorf("the operation that gave up during the outage landed later: ok=%v err=%v", ok, err)
	}

	// A second blip right away still recovers, and the rate limit keeps
	// the log at one loss and one recovery.
	srv = blip(t, srv, opts, 0, nil)
	usableWithin(t, st, "before", testLease)
	_ = srv

	text := logs.String()
	if n := countLines(text, "connection to NATS lost, reconnecting"); n != 1 {
		t.Errorf("%d loss lines for two losses within 10s, want 1:\n%s", n, text)
	}
	if n := countLines(text, "reconnected to NATS"); n != 1 || !strings.Contains(text, "downtime=") {
		t.Errorf("%d recovery lines (want 1, with its downtime):\n%s", n, text)
	}
	if !strings.Contains(text, "server=nats://<redacted>@127.0.0.1:") {
		t.Errorf("the log does not name the server (redacted):\n%s", text)
	}
	for _, bad := range []string{"outbound buffer limit exceeded", urlToken} {
		if strings.Contains(text, bad) || strings.Contains(shortErr.Error(), bad) {
			t.Errorf("log or error shows %q:\n%s\n%v", bad, text, shortErr)
		}
	}
}

func TestResendOnlyWhatWasNotSent(t *testing.T) {
	st, err := New(Config{Servers: []string{"nats://127.0.0.1:1"}, Job: "j"}, testLease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	refused := st.opErr("update", store.Ephemeral, "k", nats.ErrReconnectBufExceeded)
	lostReply := st.opErr("update", store.Ephemeral, "k", nats.ErrDisconnected)
	wantKind(t, refused, coordination.Retryable, `natsstore: update "k" in ephemeral: connection to NATS lost, request not sent (nats: outbound buffer limit exceeded)`)
	wantKind(t, lostReply, coordination.Retryable, `natsstore: update "k" in ephemeral: connection to NATS lost before the reply (nats: server is disconnected); a write may have landed`)
	tests := []struct {
		name      string
		errs      []error // returned by successive attempts; nil after
		wantCalls int
		wantErr   error
	}{
		{"success", nil, 1, nil},
		{"refused once", []error{refused}, 2, nil},
		{"refused every time", []error{refused, refused, refused, refused, refused}, maxResends + 1, refused},
		{"a lost reply is not resent", []error{lostReply}, 1, lostReply},
		{"other errors are not resent", []error{context.DeadlineExceeded}, 1, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := st.resend(t.Context(), func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls || err != tc.wantErr {
				t.Fatalf("%d attempts, error %v; want %d, %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}

// oneSplit plans one split, final.
type oneSplit struct{}

func (oneSplit) Fingerprint() string { return "one:v1" }

func (oneSplit) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal, Splits: []coordination.PlannedSplit{{Spec: coordination.SplitSpec{ID: "s-0"}}}}, nil
}

func TestWorkerKeepsItsSplitAcrossAOneSecondBlip(t *testing.T) {
	t.Parallel() // waits in real time
	// Renewals go out every lease/3 (jittered up to 1.2x) and are held
	// across the outage for up to OpTimeout = lease/2: the last one landed
	// at most 1.6s before the loss, the next lands on the reconnect.
	const lease = 4 * time.Second
	opts := serverOptions(t.TempDir())
	opts.SyncAlways = true
	srv := runServer(t, opts)
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	st, err := New(Config{Servers: []string{srv.ClientURL()}, Job: "worker", Logger: logger}, lease)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	cfg.LeaseDuration = lease
	cfg.OpTimeout = lease / 2
	cfg.Logger = logger
	c, w := startWorker(t, st, cfg, oneSplit{})
	// events polls until deadline and returns the events seen.
	events := func(until time.Time, stop func(coordination.Event) bool) []coordination.Event {
		var seen []coordination.Event
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		for {
			evs, err := c.Poll()
			if err != nil {
				t.Fatalf("coordinator failed: %v", err)
			}
			for _, ev := range evs {
				seen = append(seen, ev)
				if stop != nil && stop(ev) {
					return seen
				}
			}
			select {
			case <-w.C():
			case <-timer.C:
				return seen
			}
		}
	}
	gained := func(ev coordination.Event) bool { _, ok := ev.(coordination.Gained); return ok }
	if evs := events(time.Now().Add(10*time.Second), gained); len(evs) == 0 || !gained(evs[len(evs)-1]) {
		t.Fatalf("no Gained within 10s: %v", evs)
	}

	lost := time.Now()
	blip(t, srv, opts, time.Second, nil)
	// Half a lease past the latest lapse, the split would have been lost.
	for _, ev := range events(lost.Add(lease+lease/2), nil) {
		if _, ok := ev.(coordination.Lost); ok {
			t.Errorf("a 1s outage cost the %s lease: %T %+v", lease, ev, ev)
		}
	}
	text := logs.String()
	if strings.Contains(text, "outbound buffer limit exceeded") {
		t.Errorf("the log blames a buffer for the outage:\n%s", text)
	}
	if countLines(text, "connection to NATS lost, reconnecting") != 1 || countLines(text, "reconnected to NATS") != 1 {
		t.Errorf("the log does not say once that the connection was lost and came back:\n%s", text)
	}
}

func TestReconnectWithoutItsLossEventBreaksWatches(t *testing.T) {
	srv := startServer(t)
	st := storeFor(t, srv)
	w, err := st.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	snapshot(t, w)
	st.mu.Lock()
	c := st.conn
	st.mu.Unlock()
	// A CONNECTED event after a reconnect whose loss event the listener
	// dropped: the client's reconnect count moved on.
	c.link.mu.Lock()
	c.link.reconnects--
	c.link.mu.Unlock()
	st.linkUp(c)
	for range w.Events() {
	}
	wantKind(t, w.Err(), coordination.Retryable, "connection to NATS lost", "re-watch")
	if n := c.link.lossCount(); n != 1 {
		t.Fatalf("%d losses recorded, want 1", n)
	}
}
