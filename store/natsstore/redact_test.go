package natsstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// urlToken is the token embedded in server URLs by the tests below; it
// must never be printed.
const urlToken = "S3CRETT0KEN"

// syncBuffer is a bytes.Buffer safe for concurrent writers (log handlers).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tokenURL returns the client URL of srv with urlToken as its userinfo.
func tokenURL(srv *server.Server) string {
	return fmt.Sprintf("nats://%s@127.0.0.1:%d", urlToken, srv.Addr().(*net.TCPAddr).Port)
}

// noToken fails if text shows urlToken.
func noToken(t testing.TB, what, text string) {
	t.Helper()
	if strings.Contains(text, urlToken) {
		t.Errorf("%s prints the URL token: %s", what, text)
	}
}

func TestURLUserinfoIsNeverPrinted(t *testing.T) {
	t.Run("connect error", func(t *testing.T) {
		srv := startServer(t)
		url := tokenURL(srv)
		srv.Shutdown()
		srv.WaitForShutdown()
		var logs syncBuffer
		st := newStore(t, Config{Servers: []string{url}, Job: "j", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		_, _, err := st.Get(opCtx(t), store.Durable, "k")
		wantKind(t, err, coordination.Retryable, "natsstore: connecting to nats://<redacted>@127.0.0.1:")
		noToken(t, "the connect error", err.Error())
		noToken(t, "the store's log", logs.String())
	})
	t.Run("wrong token", func(t *testing.T) {
		srv := startServer(t, func(o *server.Options) { o.Authorization = "another" })
		st := newStore(t, Config{Servers: []string{tokenURL(srv)}, Job: "j"})
		_, _, err := st.Get(opCtx(t), store.Durable, "k")
		wantKind(t, err, coordination.Fatal, "natsstore: authorization failed for the userinfo in the server URL")
		noToken(t, "the authorization error", err.Error())
	})
	t.Run("fatal naming the connected server", func(t *testing.T) {
		srv := startServer(t, func(o *server.Options) { o.JetStream = false; o.Authorization = urlToken })
		st := newStore(t, Config{Servers: []string{tokenURL(srv)}, Job: "j"})
		_, _, err := st.Get(opCtx(t), store.Durable, "k")
		wantKind(t, err, coordination.Fatal, "JetStream is not enabled for this account on nats://<redacted>@127.0.0.1:")
		noToken(t, "the Fatal", err.Error())
	})
	t.Run("latched Fatal and coordinator logs", func(t *testing.T) {
		srv := startServer(t, func(o *server.Options) { o.JetStream = false; o.Authorization = urlToken })
		var logs syncBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		st := newStore(t, Config{Servers: []string{tokenURL(srv)}, Job: "j", Logger: logger})
		err := latchedFatal(t, st, logger)
		wantKind(t, err, coordination.Fatal, "nats://<redacted>@127.0.0.1:")
		noToken(t, "the latched Fatal", err.Error())
		noToken(t, "the log", logs.String())
		if !strings.Contains(logs.String(), "<redacted>") {
			t.Errorf("the log does not show the failure with the redacted URL: %s", logs.String())
		}
	})
}

// latchedFatal starts a coordinator over st and returns the error Poll
// latches.
func latchedFatal(t *testing.T, st *Store, logger *slog.Logger) error {
	t.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	cfg.LeaseDuration = testLease
	cfg.OpTimeout = testLease / 4
	cfg.Logger = logger
	c, w := startWorker(t, st, cfg, nopPlanner{})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-w.C():
		case <-deadline:
			t.Fatal("no latched error within 10s")
		}
		if _, err := c.Poll(); err != nil {
			return err
		}
	}
}

// nopPlanner plans nothing.
type nopPlanner struct{}

func (nopPlanner) Fingerprint() string { return "nop:v1" }

func (nopPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}
