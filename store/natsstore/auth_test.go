package natsstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// fatalAtOnce runs one operation with a 10s budget and requires a Fatal
// error containing every fragment well before the budget runs out: an
// authentication failure is not retried.
func fatalAtOnce(t *testing.T, st *Store, fragments ...string) {
	t.Helper()
	start := time.Now()
	_, _, err := st.Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, fragments...)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Fatal took %s; it must come at once", took)
	}
	t.Logf("%v", err)
}

// works runs a create and a get.
func works(t *testing.T, st *Store) {
	t.Helper()
	mustCreate(t, st, store.Durable, "k", "v")
	if e, ok, err := st.Get(opCtx(t), store.Durable, "k"); !ok || err != nil || string(e.Value) != "v" {
		t.Fatalf("get: %+v ok=%v err=%v", e, ok, err)
	}
}

func TestAuthUserPassword(t *testing.T) {
	srv := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "svc", Password: "s3cret"}}
	})
	cfg := Config{Servers: []string{srv.ClientURL()}, Job: "auth"}
	t.Run("success", func(t *testing.T) {
		cfg := cfg
		cfg.Credentials = Credentials{Username: "svc", Password: "s3cret"}
		works(t, newStore(t, cfg))
	})
	t.Run("wrong password", func(t *testing.T) {
		cfg := cfg
		cfg.Credentials = Credentials{Username: "svc", Password: "wrong"}
		fatalAtOnce(t, newStore(t, cfg), `natsstore: authorization failed for user "svc": `, "; check Config.Credentials")
	})
	t.Run("no credentials", func(t *testing.T) {
		fatalAtOnce(t, newStore(t, cfg), "natsstore: authorization failed for no credentials: ", "; check Config.Credentials")
	})
}

func TestAuthToken(t *testing.T) {
	srv := startServer(t, func(o *server.Options) { o.Authorization = "t0ken" })
	cfg := Config{Servers: []string{srv.ClientURL()}, Job: "auth"}
	t.Run("success", func(t *testing.T) {
		cfg := cfg
		cfg.Credentials = Credentials{Token: "t0ken"}
		works(t, newStore(t, cfg))
	})
	t.Run("wrong token", func(t *testing.T) {
		cfg := cfg
		cfg.Credentials = Credentials{Token: "wrong"}
		fatalAtOnce(t, newStore(t, cfg), "natsstore: authorization failed for token: ", "; check Config.Credentials")
	})
}

func TestAuthCredsFile(t *testing.T) {
	dir := t.TempDir()
	op := newOperator(t)
	srv := startServer(t, func(o *server.Options) {
		o.TrustedOperators = []*jwt.OperatorClaims{op.claims}
		o.AccountResolver = op.resolver(t)
		o.SystemAccount = op.sysPub
	})
	cfg := Config{Servers: []string{srv.ClientURL()}, Job: "auth"}
	t.Run("success", func(t *testing.T) {
		cfg := cfg
		cfg.Credentials = Credentials{CredsFile: op.userCreds(t, dir, "good", op.accKP)}
		works(t, newStore(t, cfg))
	})
	t.Run("user of an unknown account", func(t *testing.T) {
		stranger := newOperator(t)
		path := stranger.userCreds(t, dir, "stranger", stranger.accKP)
		cfg := cfg
		cfg.Credentials = Credentials{CredsFile: path}
		fatalAtOnce(t, newStore(t, cfg), fmt.Sprintf("natsstore: authorization failed for creds file %q: ", path), "; check Config.Credentials")
	})
	t.Run("malformed file", func(t *testing.T) {
		path := filepath.Join(dir, "garbage.creds")
		if err := os.WriteFile(path, []byte("not a creds file\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := cfg
		cfg.Credentials = Credentials{CredsFile: path}
		fatalAtOnce(t, newStore(t, cfg), fmt.Sprintf("natsstore: creds file %q does not hold a user JWT and seed", path))
	})
	t.Run("unreadable file", func(t *testing.T) {
		path := filepath.Join(dir, "missing.creds")
		cfg := cfg
		cfg.Credentials = Credentials{CredsFile: path}
		fatalAtOnce(t, newStore(t, cfg), fmt.Sprintf("natsstore: cannot read creds file %q", path))
	})
}

// tlsServer starts a server with a certificate of ca; verify requires
// client certificates signed by ca.
func tlsServer(t *testing.T, ca *testCA, dir string, verify bool) *server.Server {
	t.Helper()
	certPath, keyPath := ca.issue(t, dir, "server", false)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: certPath, KeyFile: keyPath, CaFile: ca.path, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, func(o *server.Options) {
		o.TLS = true
		o.TLSVerify = verify
		o.TLSConfig = tc
		o.TLSTimeout = 2
	})
}

// tlsURL returns the tls:// URL of srv.
func tlsURL(srv *server.Server) string {
	return strings.Replace(srv.ClientURL(), "nats://", "tls://", 1)
}

func TestAuthTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "ca")
	srv := tlsServer(t, ca, dir, false)
	addr := strings.TrimPrefix(tlsURL(srv), "tls://")
	t.Run("success", func(t *testing.T) {
		works(t, newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "tls", TLS: &TLS{RootCA: ca.path}}))
	})
	t.Run("success with a nats URL", func(t *testing.T) {
		works(t, newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "tls2", TLS: &TLS{RootCA: ca.path}}))
	})
	t.Run("untrusted CA", func(t *testing.T) {
		other := newCA(t, dir, "other-ca")
		st := newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "tls", TLS: &TLS{RootCA: other.path}})
		fatalAtOnce(t, st, "natsstore: TLS certificate verification failed for server "+addr+": ", "check Config.TLS.RootCA")
	})
	t.Run("unreadable CA file", func(t *testing.T) {
		path := filepath.Join(dir, "nope.pem")
		st := newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "tls", TLS: &TLS{RootCA: path}})
		fatalAtOnce(t, st, fmt.Sprintf("natsstore: cannot read root CA file %q", path))
	})
	t.Run("TLS wanted from a plain server", func(t *testing.T) {
		plain := startServer(t)
		st := newStore(t, Config{Servers: []string{plain.ClientURL()}, Job: "tls", TLS: &TLS{RootCA: ca.path}})
		fatalAtOnce(t, st, "does not offer TLS")
	})
}

func TestAuthMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "ca")
	srv := tlsServer(t, ca, dir, true)
	addr := strings.TrimPrefix(tlsURL(srv), "tls://")
	t.Run("success", func(t *testing.T) {
		cert, key := ca.issue(t, dir, "client", true)
		works(t, newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "mtls", TLS: &TLS{RootCA: ca.path, ClientCert: cert, ClientKey: key}}))
	})
	t.Run("missing client certificate", func(t *testing.T) {
		st := newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "mtls", TLS: &TLS{RootCA: ca.path}})
		fatalAtOnce(t, st, "natsstore: server "+addr+" rejected the TLS handshake: ", "check Config.TLS.ClientCert")
	})
	t.Run("client certificate of another CA", func(t *testing.T) {
		other := newCA(t, dir, "other-ca")
		cert, key := other.issue(t, dir, "stranger", true)
		st := newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "mtls", TLS: &TLS{RootCA: ca.path, ClientCert: cert, ClientKey: key}})
		fatalAtOnce(t, st, "natsstore: server "+addr+" rejected the TLS handshake: ")
	})
	t.Run("unreadable client key", func(t *testing.T) {
		cert, _ := ca.issue(t, dir, "client2", true)
		key := filepath.Join(dir, "missing-key.pem")
		st := newStore(t, Config{Servers: []string{tlsURL(srv)}, Job: "mtls", TLS: &TLS{RootCA: ca.path, ClientCert: cert, ClientKey: key}})
		fatalAtOnce(t, st, fmt.Sprintf("with key %q", key))
	})
}

// TestADeniedRequestIsLoggedAsAPermissionProblem runs a store as a user
// that may use JetStream but not the job's buckets: the refused request
// only times out, so the store's log must say what is wrong.
func TestADeniedRequestIsLoggedAsAPermissionProblem(t *testing.T) {
	srv := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "svc", Password: "pw", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"$JS.API.INFO"}},
			Subscribe: &server.SubjectPermission{Allow: []string{InboxPrefix("denied") + ".>"}},
		}}}
	})
	var logs syncBuffer
	st := newStore(t, Config{Servers: []string{srv.ClientURL()}, Job: "denied", Credentials: Credentials{Username: "svc", Password: "pw"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, _, err := st.Get(ctx, store.Durable, "k"); err == nil {
		t.Fatal("a Get without the permission succeeded")
	}
	waitFor(t, 5*time.Second, "the log line of the refused request", func() bool {
		return strings.Contains(logs.String(), `level=ERROR msg="NATS refused a request of the store: the user lacks a permission the job needs`) &&
			strings.Contains(logs.String(), "KV_coordination_denied_state")
	})
}
