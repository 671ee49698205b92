package pgstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/testkit"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	dsn := "postgres://svc@127.0.0.1:5432/db"
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no DSN", Config{Job: "j"}, "DSN is required"},
		{"bad DSN", Config{DSN: "postgres://svc:pw@host:notaport/db", Job: "j"}, "does not parse"},
		{"no job", Config{DSN: dsn}, "Job must be"},
		{"job with a dot", Config{DSN: dsn, Job: "a.b"}, "Job must be"},
		{"job too long", Config{DSN: dsn, Job: strings.Repeat("j", maxJobLen+1)}, "Job must be"},
		{"negative pool", Config{DSN: dsn, Job: "j", MaxConns: -1}, "MaxConns must be"},
		{"negative retention", Config{DSN: dsn, Job: "j", Retention: -time.Second}, "Retention must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantKind(t, c.cfg.Validate(), coordination.Fatal, c.want)
		})
	}
	if err := (Config{DSN: dsn, Job: strings.Repeat("j", maxJobLen)}).Validate(); err != nil {
		t.Errorf("a %d-byte job: %v", maxJobLen, err)
	}
	if _, err := New(Config{DSN: dsn, Job: "j"}, MinLeaseTTL-time.Millisecond); coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "leaseTTL") {
		t.Errorf("a lease below the floor: %v", err)
	}
}

func TestRedactDSN(t *testing.T) {
	cases := map[string]string{
		"postgres://svc:pw0@db:5432/x?sslmode=require":       "postgres://svc:<redacted>@db:5432/x?sslmode=require",
		"postgresql://svc@db/x?password=pw0&sslmode=disable": "postgresql://svc@db/x?password=<redacted>&sslmode=disable",
		"host=db user=svc password=pw0 sslmode=require":      "host=db user=svc password=<redacted> sslmode=require",
		"host=db password='p w0\\' x' user=svc":              "host=db password=<redacted> user=svc",
		"host=db sslpassword = pw0 user=svc":                 "host=db sslpassword = <redacted> user=svc",
		"postgres://svc:pw0@db:bad/x":                        "postgres://<redacted>@db:bad/x",
		"postgres://svc@db/x":                                "postgres://svc@db/x",
		"POSTGRES://svc:pw0@db/x":                            "postgres://svc:<redacted>@db/x",
		"Postgresql://svc:pw0@db/x?PassWord=pw0":             "postgresql://svc:<redacted>@db/x?PassWord=<redacted>",
		"host=db PASSWORD=pw0":                               "host=db PASSWORD=<redacted>",
	}
	for in, want := range cases {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

// secretPW is the password the next test puts in every place a DSN or a
// Config can carry one; it must never be printed.
const secretPW = "S3cretPassw0rd"

func TestPasswordIsNeverPrinted(t *testing.T) {
	s := pgtest.Need(t, srv)
	var logs bytes.Buffer
	dsn := fmt.Sprintf("postgres://nobody:%s@127.0.0.1:%d/postgres?sslmode=disable", secretPW, s.Port())
	cfg := Config{DSN: dsn, Password: secretPW, Job: "redact", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	st, err := New(cfg, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The role does not exist: the connection is refused with an error
	// that names the user, never the password.
	_, _, err = st.Create(opCtx(t), store.Durable, "k", nil)
	wantKind(t, err, coordination.Fatal, "nobody")
	var out bytes.Buffer
	slog.New(slog.NewTextHandler(&out, nil)).Info("config", "cfg", cfg, "store", st)
	texts := map[string]string{
		"the error":          err.Error(),
		"Config %v":          fmt.Sprintf("%v", cfg),
		"Config %+v":         fmt.Sprintf("%+v", cfg),
		"Config %#v":         fmt.Sprintf("%#v", cfg),
		"Store %v":           fmt.Sprintf("%v", st),
		"Store %#v":          fmt.Sprintf("%#v", st),
		"slog":               out.String(),
		"the store's log":    logs.String(),
		"a validation error": Config{DSN: "postgres://u:" + secretPW + "@h:x/db", Job: "j"}.Validate().Error(),
		"keyword DSN error":  Config{DSN: "host=h port=x password=" + secretPW, Job: "j"}.Validate().Error(),
	}
	// A URL scheme in capitals is not a URL to pgx (it fails to parse) but
	// is one to a reader: every rendering masks its password.
	for _, scheme := range []string{"POSTGRES", "Postgres", "PostgreSQL"} {
		upper := Config{DSN: scheme + "://svc:" + secretPW + "@127.0.0.1:5432/db", Job: "j"}
		texts[scheme+" validation error"] = upper.Validate().Error()
		texts[scheme+" Config %v"] = fmt.Sprintf("%v", upper)
		texts[scheme+" Config %#v"] = fmt.Sprintf("%#v", upper)
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "cfg", upper)
		texts[scheme+" slog"] = buf.String()
	}
	for what, text := range texts {
		if strings.Contains(text, secretPW) {
			t.Errorf("%s prints the password: %s", what, text)
		}
	}
	if !strings.Contains(texts["Config %v"], "<redacted>") {
		t.Errorf("Config %%v shows no redaction: %s", texts["Config %v"])
	}
}

func TestDSNCannotLiftTheStatementBound(t *testing.T) {
	dsn := "postgres://svc@127.0.0.1:5432/db?sslmode=disable"
	for _, c := range []struct{ dsn, want string }{
		{dsn + "&statement_timeout=0", "statement_timeout=0, which turns the bound off"},
		{dsn + "&idle_in_transaction_session_timeout=0", "idle_in_transaction_session_timeout=0"},
		{dsn + "&statement_timeout=1min", "above the store's bound"},
		{dsn + "&statement_timeout=forever", "does not parse"},
		{dsn + "&options=-c%20statement_timeout%3D0", "statement_timeout=0"},
		{"host=127.0.0.1 user=svc options='-c statement_timeout=0'", "statement_timeout=0"},
		{"host=127.0.0.1 user=svc statement_timeout=0", "statement_timeout=0"},
	} {
		_, err := New(Config{DSN: c.dsn, Job: "j"}, testTTL)
		wantKind(t, err, coordination.Fatal, c.want, "remove it from the DSN")
	}
	for _, ok := range []string{dsn + "&statement_timeout=200ms", dsn + "&statement_timeout=100", "host=127.0.0.1 statement_timeout='250 ms'"} {
		st, err := New(Config{DSN: ok, Job: "j"}, testTTL)
		if err != nil {
			t.Errorf("a lower bound in %q: %v", ok, err)
			continue
		}
		st.Close()
	}
}

func TestPoolMaxConnsIsHonoured(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	for _, c := range []struct {
		dsn  string
		max  int32
		want int32
	}{
		{s.DSN("postgres") + "&pool_max_conns=2", 0, 2},
		{s.DSN("postgres") + "&pool_max_conns=2", 2, 2},
		{s.DSN("postgres"), 3, 3},
		{s.DSN("postgres"), 0, defaultMaxConns},
		{fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable pool_max_conns=2", s.Port()), 0, 2},
	} {
		st := newStore(t, s, Config{DSN: c.dsn, MaxConns: c.max}, testTTL)
		if got := st.pool.Config().MaxConns; got != c.want {
			t.Errorf("DSN %q, MaxConns %d: a pool of %d, want %d", c.dsn, c.max, got, c.want)
		}
	}
	_, err := New(Config{DSN: s.DSN("postgres") + "&pool_max_conns=2", Job: "j", MaxConns: 5}, testTTL)
	wantKind(t, err, coordination.Fatal, "MaxConns is 5", "pool_max_conns=2")

	// Under load, the store holds no more than the pool and its LISTEN
	// connection.
	st := newStore(t, s, Config{DSN: s.DSN("postgres") + "&pool_max_conns=2"}, testTTL)
	w, err := st.Watch(opCtx(t), store.Durable, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	done := make(chan struct{})
	var peak int64
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					_, _, _ = st.Create(opCtx(t), store.Durable, fmt.Sprintf("k%d.%d", g, i), nil)
				}
			})
		}
		wg.Wait()
	}()
	for {
		select {
		case <-done:
			if peak > 3 {
				t.Errorf("the store held %d connections at once, want at most 3 (pool_max_conns=2 and the LISTEN connection)", peak)
			}
			return
		default:
		}
		var n int64
		if err := s.QueryRowOn(opCtx(t), "postgres", "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", []any{"spate-coordination " + st.cfg.Job}, &n); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, n)
	}
}

// TestRollbackAdviceIsPostgreSQLs: the advice a rollback error carries on
// this store (store.RollbackAdvice, also through a decorator) says how a
// PostgreSQL database loses acknowledged writes, and nothing of NATS.
func TestRollbackAdviceIsPostgreSQLs(t *testing.T) {
	st, err := New(Config{DSN: "postgres://svc@127.0.0.1:1/db", Job: "j"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, s := range []store.Store{st, testkit.NewFaultStore(st)} {
		a := store.RollbackAdvice(s)
		if strings.Contains(a, "NATS") || strings.Contains(a, "sync_interval") || !strings.Contains(a, "synchronous replication") {
			t.Errorf("advice through %T: %s", s, a)
		}
	}
}
