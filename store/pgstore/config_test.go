package pgstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
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
	for what, text := range texts {
		if strings.Contains(text, secretPW) {
			t.Errorf("%s prints the password: %s", what, text)
		}
	}
	if !strings.Contains(texts["Config %v"], "<redacted>") {
		t.Errorf("Config %%v shows no redaction: %s", texts["Config %v"])
	}
}
