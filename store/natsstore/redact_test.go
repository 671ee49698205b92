package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"pgregory.net/rapid"

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

// leakFree fails if text quotes secret or any comma-separated piece of it
// of four bytes or more (the client splits server entries at commas, so a
// piece is what a careless error would quote).
func leakFree(t interface {
	Helper()
	Fatalf(string, ...any)
}, what, text, secret string) {
	t.Helper()
	for _, piece := range append(strings.Split(secret, ","), secret) {
		if len(piece) >= 4 && strings.Contains(text, piece) {
			t.Fatalf("%s quotes %q of the secret %q: %s", what, piece, secret, text)
		}
	}
}

func TestCommasInServerEntriesNeverLeakAPassword(t *testing.T) {
	tests := []struct {
		name, entry, secret, want string
	}{
		{"comma in a password", "nats://svc:s3cr,et@127.0.0.1:4222", "s3cr,et",
			`natsstore: Servers[0]: the client splits it at commas into 2 URLs, and in URL 1 the URL does not parse (write a comma inside a password or token as %2C), got "nats://<redacted>@127.0.0.1:4222"`},
		{"second url bad", "nats://svc:pw@127.0.0.1:1,nats://svc:TOPSECRET@127.0.0.1:4x", "TOPSECRET",
			`natsstore: Servers[0]: the client splits it at commas into 2 URLs, and in URL 2 the URL does not parse (write a comma inside a password or token as %2C), got "nats://<redacted>@127.0.0.1:4x"`},
		{"second url without scheme", "nats://a:4222, b:4222", "",
			`natsstore: Servers[0]: the client splits it at commas into 2 URLs, and in URL 2 scheme must be nats:// or tls://, got "nats://a:4222, b:4222"`},
		{"port out of range", "nats://TOKEN1@h:99999", "TOKEN1",
			`natsstore: Servers[0]: the port must be 1..65535, got "nats://<redacted>@h:99999"`},
		{"no host", "nats://:4222", "", `natsstore: Servers[0]: a host is required, got "nats://:4222"`},
		{"only commas", " , ", "", `natsstore: Servers[0]: no server URL in it; remove the entry, got " , "`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := New(Config{Servers: []string{tc.entry}, Job: "j"}, testLease)
			if err == nil {
				// Today's code accepts the entry; the client's error then
				// shows what it parsed.
				t.Cleanup(func() { _ = st.Close() })
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, _, err = st.Get(ctx, store.Durable, "k")
				leakFree(t, "the connect error", err.Error(), tc.secret)
				t.Fatalf("New accepted %q; the operation failed with %v", RedactURL(tc.entry), err)
			}
			var e *coordination.Error
			if !asError(err, &e) || e.Kind != coordination.Fatal || e.Reason != tc.want {
				t.Fatalf("New error = %v, want Fatal %q", err, tc.want)
			}
			leakFree(t, "the Validate error", err.Error(), tc.secret)
		})
	}
	t.Run("several valid URLs in one entry", func(t *testing.T) {
		if err := (Config{Servers: []string{"nats://a:1, tls://u:p%2Cw@b:2,"}, Job: "j"}).Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestValidateNeverQuotesAPassword(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		password := rapid.StringMatching(`[a-z0-9,:/?#%@ ]{4,24}`).Draw(t, "password")
		entry := "nats://svc:" + password + "@127.0.0.1:4222"
		if extra := rapid.Bool().Draw(t, "second url"); extra {
			entry = "nats://127.0.0.1:1," + entry
		}
		err := Config{Servers: []string{entry}, Job: "j"}.Validate()
		if err == nil {
			return // the client parses it as meant, or as one whose parse succeeds
		}
		leakFree(t, "Validate", err.Error(), password)
	})
}

func TestScrubTakesServerURLsOutOfClientErrors(t *testing.T) {
	cfg := Config{Servers: []string{"nats://svc:hunter22@a:4222,nats://TOKEN22@b:4222"}, Job: "j"}
	raw := fmt.Errorf("dial nats://TOKEN22@b:4222: %w", nats.ErrNoServers)
	err := cfg.scrub(raw)
	if got, want := err.Error(), "dial nats://<redacted>@b:4222: "+nats.ErrNoServers.Error(); got != want {
		t.Fatalf("scrub = %q, want %q", got, want)
	}
	if !errors.Is(err, nats.ErrNoServers) {
		t.Fatal("the scrubbed error no longer matches its cause")
	}
	//lint:ignore SA1007 the invalid URL is the point: its parse error carries the password
	_, parseErr := url.Parse("nats://svc:hunter22")
	err = cfg.scrub(fmt.Errorf("connect: %w", parseErr))
	leakFree(t, "a scrubbed parse error", err.Error(), "hunter22")
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		t.Fatalf("the scrubbed error still unwraps to the parse error %q", ue.URL)
	}
}

func TestStoreRendersWithoutSecrets(t *testing.T) {
	st := newStore(t, Config{Servers: []string{"nats://svc:urlsecret@h:4222"}, Job: "j",
		Credentials: Credentials{Username: "svc", Password: "hunter2"}})
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("store", "st", st)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("store", "st", st)
	var nilStore *Store
	renders := map[string]string{
		"%v":  fmt.Sprintf("%v", st),
		"%+v": fmt.Sprintf("%+v", st),
		"%#v": fmt.Sprintf("%#v", st),
		//lint:ignore S1025 each verb is checked, %s included
		"%s":        fmt.Sprintf("%s", st),
		"slog text": text.String(),
		"slog json": js.String(),
		"%v nil":    fmt.Sprintf("%v", nilStore),
	}
	for how, out := range renders {
		for _, leak := range []string{"hunter2", "urlsecret"} {
			if strings.Contains(out, leak) {
				t.Errorf("%s leaks %q: %s", how, leak, out)
			}
		}
		if how != "%v nil" && (!strings.Contains(out, "<redacted>") || !strings.Contains(out, "svc") || !strings.Contains(out, "2s")) {
			t.Errorf("%s should show the redacted config, the user and the lease: %s", how, out)
		}
	}
}
