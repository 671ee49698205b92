package natsstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// stubServer accepts TCP connections on loopback, counts them and hands
// each to serve.
func stubServer(t *testing.T, serve func(net.Conn)) (url string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "nats://" + ln.Addr().String(), accepted
}

func TestNewDoesNoIO(t *testing.T) {
	url, accepted := stubServer(t, func(c net.Conn) {})
	st, err := New(Config{Servers: []string{url}, Job: "j"}, testLease)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("New and Close made %d connections", n)
	}
}

func TestConcurrentFirstOperationsShareOneAttempt(t *testing.T) {
	// A server that accepts and never answers: the attempt hangs until its
	// deadline, so every operation started meanwhile must join it.
	url, accepted := stubServer(t, func(c net.Conn) { _, _ = bufio.NewReader(c).ReadString(0) })
	st := newStore(t, Config{Servers: []string{url}, Job: "j"})
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = st.Get(ctx, store.Durable, "k") })
	}
	wg.Wait()
	for _, err := range errs {
		wantKind(t, err, coordination.Retryable)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d connections for 8 concurrent first operations, want 1", n)
	}
}

func TestFailedConnectIsNotRemembered(t *testing.T) {
	srv := startServer(t)
	port := srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()
	st := newStore(t, Config{Servers: []string{fmt.Sprintf("nats://127.0.0.1:%d", port)}, Job: "j"})
	_, _, err := st.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Retryable, "natsstore: connecting to nats://127.0.0.1:")
	opts := serverOptions(t.TempDir())
	opts.Port = port
	runServer(t, opts)
	if _, ok, err := st.Get(opCtx(t), store.Durable, "k"); ok || err != nil {
		t.Fatalf("get after the server came up: ok=%v err=%v", ok, err)
	}
}

// fakeNATS answers a client's CONNECT and PING like a server announcing
// version, then ignores everything else.
func fakeNATS(version string) func(net.Conn) {
	return func(c net.Conn) {
		fmt.Fprintf(c, "INFO {\"server_id\":\"stub\",\"server_name\":\"stub\",\"version\":%q,\"go\":\"go1.22\",\"host\":\"127.0.0.1\",\"port\":4222,\"headers\":true,\"max_payload\":1048576,\"proto\":1}\r\n", version)
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(line, "PING") {
				_, _ = c.Write([]byte("PONG\r\n"))
			}
		}
	}
}

func TestVersionFloorAgainstAStubServer(t *testing.T) {
	url, _ := stubServer(t, fakeNATS("2.10.22"))
	st := newStore(t, Config{Servers: []string{url}, Job: "j"})
	_, _, err := st.Create(opCtx(t), store.Durable, "k", []byte("v"))
	wantKind(t, err, coordination.Fatal, "natsstore: server version 2.10.22 is below the required 2.11", "2.11", "upgrade NATS")
}

func TestJetStreamNotEnabledIsFatal(t *testing.T) {
	srv := startServer(t, func(o *server.Options) { o.JetStream = false })
	st := storeFor(t, srv)
	_, _, err := st.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, "JetStream is not enabled")
}

func TestBucketSettings(t *testing.T) {
	srv := startServer(t)
	st := storeFor(t, srv)
	mustCreate(t, st, store.Durable, "k", "v")
	js := jsFor(t, srv)
	ctx := opCtx(t)
	for _, tc := range []struct {
		bucket       string
		ttl, markers time.Duration
	}{
		{"coordination_t_state", 0, 0},
		{"coordination_t_lease", testLease, testLease},
	} {
		kv, err := js.KeyValue(ctx, tc.bucket)
		if err != nil {
			t.Fatal(err)
		}
		status, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := status.Config()
		info := status.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
		if cfg.History != 1 || cfg.TTL != tc.ttl || cfg.LimitMarkerTTL != tc.markers ||
			cfg.MaxValueSize != bucketMaxMsgSize || cfg.Replicas != 1 || info.Storage != jetstream.FileStorage {
			t.Fatalf("bucket %s: %+v", tc.bucket, cfg)
		}
	}
}

// jsFor connects a plain JetStream client to srv.
func jsFor(t testing.TB, srv *server.Server) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestAdoptingExistingBuckets(t *testing.T) {
	goodLease := jetstream.KeyValueConfig{Bucket: "coordination_j_lease", TTL: testLease, LimitMarkerTTL: testLease}
	tests := []struct {
		name string
		pre  []jetstream.KeyValueConfig
		want string // "" means adopted
	}{
		{"state with a TTL", []jetstream.KeyValueConfig{{Bucket: "coordination_j_state", TTL: time.Minute}},
			"natsstore: bucket coordination_j_state was created with TTL 1m0s, but the state bucket must not expire"},
		{"lease with another TTL", []jetstream.KeyValueConfig{{Bucket: "coordination_j_lease", TTL: 30 * time.Second, LimitMarkerTTL: 30 * time.Second}},
			"natsstore: bucket coordination_j_lease was created with TTL 30s, but this store's lease TTL is 2s; a job's lease duration is fixed once it starts (remove the job's buckets to change it)"},
		{"lease without markers", []jetstream.KeyValueConfig{{Bucket: "coordination_j_lease", TTL: testLease}},
			"natsstore: bucket coordination_j_lease has no limit markers"},
		{"small values", []jetstream.KeyValueConfig{{Bucket: "coordination_j_state", MaxValueSize: 1024}},
			"natsstore: bucket coordination_j_state has a max value size of 1024 bytes"},
		{"unlimited values and another replica count", []jetstream.KeyValueConfig{{Bucket: "coordination_j_state", MaxValueSize: -1}, goodLease}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t)
			for _, pre := range tc.pre {
				if _, err := jsFor(t, srv).CreateKeyValue(opCtx(t), pre); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			cfg := Config{Servers: []string{srv.ClientURL()}, Job: "j", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			if tc.want != "" {
				_, _, err := newStore(t, cfg).Get(opCtx(t), store.Durable, "k")
				wantKind(t, err, coordination.Fatal, tc.want)
				return
			}
			cfg.Replicas = 3 // the buckets have 1: adopted with a warning, not changed
			st := newStore(t, cfg)
			mustCreate(t, st, store.Durable, "k", "v")
			mustCreate(t, st, store.Ephemeral, "k", "v")
			if !strings.Contains(logs.String(), "bucket replica count differs") {
				t.Fatalf("no replica warning logged: %s", logs.String())
			}
		})
	}
}

func TestOptionsApplyAfterTheStoresOwn(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "opts", Options: []nats.Option{nats.Name("custom-client")}})
	works(t, st)
	cz, err := srv.Connz(&server.ConnzOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cz.Conns) != 1 || cz.Conns[0].Name != "custom-client" {
		t.Fatalf("connections %+v; want one named custom-client (the option given wins over the store's name)", cz.Conns)
	}
}

func TestPassedInConn(t *testing.T) {
	t.Parallel() // waits in real time
	opts := serverOptions(t.TempDir())
	opts.SyncAlways = true
	srv := runServer(t, opts)
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	connect := func(o ...nats.Option) *nats.Conn {
		t.Helper()
		nc, err := nats.Connect(srv.ClientURL(), o...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	jobs := 0
	storeOn := func(nc *nats.Conn) (*Store, *syncBuffer) {
		t.Helper()
		logs := new(syncBuffer)
		jobs++
		return newStore(t, Config{Conn: nc, Job: fmt.Sprintf("conn%d", jobs), Logger: slog.New(slog.NewTextHandler(logs, nil))}), logs
	}
	const slow = "reconnects too slowly for the lease"

	nc := connect(nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(10*time.Millisecond, 10*time.Millisecond), nats.MaxReconnects(-1))
	st, logs := storeOn(nc)
	works(t, st)
	if strings.Contains(logs.String(), slow) {
		t.Errorf("a connection reconnecting within 60ms was warned about:\n%s", logs)
	}

	// The store follows the passed-in connection's status: a restart
	// breaks its watches, and the store is usable again after it.
	w, err := st.Watch(t.Context(), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	snapshot(t, w)
	srv.Shutdown()
	srv.WaitForShutdown()
	lost := time.Now()
	for range w.Events() {
	}
	wantKind(t, w.Err(), coordination.Retryable, "connection to NATS lost", "re-watch")
	if took := time.Since(lost); took > testLease/2 {
		t.Errorf("the watch ended %s after the server stopped", took)
	}
	srv = runServer(t, opts)
	t.Logf("usable %s after the restart", usableWithin(t, st, "k", 5*time.Second))
	if !strings.Contains(logs.String(), "connection to NATS lost, reconnecting") || !strings.Contains(logs.String(), "reconnected to NATS") {
		t.Errorf("the loss and recovery of a passed-in connection were not logged:\n%s", logs)
	}

	// Close leaves the caller's connection open.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !nc.IsConnected() {
		t.Fatalf("Store.Close closed the passed-in connection (status %v)", nc.Status())
	}
	if err := nc.Publish("after.close", nil); err != nil || nc.Flush() != nil {
		t.Fatalf("the passed-in connection does not work after Store.Close: %v", err)
	}

	// Default client settings reconnect after 2s: warned about.
	slowStore, slowLogs := storeOn(connect())
	works(t, slowStore)
	if !strings.Contains(slowLogs.String(), slow) {
		t.Errorf("no warning for a connection that reconnects after 2s:\n%s", slowLogs)
	}

	// Once the caller closes it, operations are Fatal.
	nc3 := connect()
	st3, _ := storeOn(nc3)
	works(t, st3)
	nc3.Close()
	_, _, err = st3.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, "natsstore: the connection passed as Config.Conn is closed")
}
