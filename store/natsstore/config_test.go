package natsstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

func TestNewValidates(t *testing.T) {
	ok := Config{Servers: []string{"nats://127.0.0.1:4222"}, Job: "job-1_a"}
	with := func(f func(*Config)) Config {
		c := ok
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		cfg   Config
		lease time.Duration
		want  string // "" means valid
	}{
		{"valid", ok, 2 * time.Second, ""},
		{"valid tls and several servers", with(func(c *Config) {
			c.Servers = []string{"tls://a:4222", "nats://b:4222"}
			c.TLS = &TLS{RootCA: "ca.pem", ClientCert: "c.pem", ClientKey: "k.pem"}
		}), 2 * time.Second, ""},
		{"valid replicas 0 3 5", with(func(c *Config) { c.Replicas = 5 }), time.Minute, ""},
		{"valid user", with(func(c *Config) { c.Credentials = Credentials{Username: "u", Password: "p"} }), 2 * time.Second, ""},
		{"valid token", with(func(c *Config) { c.Credentials = Credentials{Token: "t"} }), 2 * time.Second, ""},
		{"valid creds", with(func(c *Config) { c.Credentials = Credentials{CredsFile: "x.creds"} }), 2 * time.Second, ""},
		{"no servers", with(func(c *Config) { c.Servers = nil }), 2 * time.Second,
			"natsstore: Servers: at least one server URL is required (or an established connection in Conn)"},
		{"bad scheme", with(func(c *Config) { c.Servers = []string{"nats://a:1", "http://b:4222"} }), 2 * time.Second,
			`natsstore: Servers[1]: scheme must be nats:// or tls://, got "http://b:4222"`},
		{"no scheme", with(func(c *Config) { c.Servers = []string{"localhost:4222"} }), 2 * time.Second,
			`natsstore: Servers[0]: scheme must be nats:// or tls://, got "localhost:4222"`},
		{"url password hidden", with(func(c *Config) { c.Servers = []string{"ws://u:secret@b:4222"} }), 2 * time.Second,
			`natsstore: Servers[0]: scheme must be nats:// or tls://, got "ws://<redacted>@b:4222"`},
		{"url token hidden", with(func(c *Config) { c.Servers = []string{"ws://TOKEN@b:4222"} }), 2 * time.Second,
			`natsstore: Servers[0]: scheme must be nats:// or tls://, got "ws://<redacted>@b:4222"`},
		{"unparsable url hidden", with(func(c *Config) { c.Servers = []string{"nats://TOK EN@b:%zz"} }), 2 * time.Second,
			`natsstore: Servers[0]: the URL does not parse, got "nats://<redacted>@b:%zz"`},
		{"valid conn", Config{Conn: &nats.Conn{}, Job: "j"}, 2 * time.Second, ""},
		{"valid options", with(func(c *Config) { c.Options = []nats.Option{nats.Name("n")} }), 2 * time.Second, ""},
		{"conn and servers", with(func(c *Config) { c.Conn = &nats.Conn{} }), 2 * time.Second,
			"natsstore: Conn is set, so Servers, Credentials, TLS and Options must be empty (they configure a connection the store dials); set Conn or those, not both"},
		{"conn and token", Config{Conn: &nats.Conn{}, Job: "j", Credentials: Credentials{Token: "t"}}, 2 * time.Second,
			"natsstore: Conn is set, so Servers, Credentials, TLS and Options must be empty (they configure a connection the store dials); set Conn or those, not both"},
		{"conn and options", Config{Conn: &nats.Conn{}, Job: "j", Options: []nats.Option{nats.Name("n")}}, 2 * time.Second,
			"natsstore: Conn is set, so Servers, Credentials, TLS and Options must be empty (they configure a connection the store dials); set Conn or those, not both"},
		{"nil option", with(func(c *Config) { c.Options = []nats.Option{nats.Name("n"), nil} }), 2 * time.Second,
			"natsstore: Options[1] is nil; remove it"},
		{"empty job", with(func(c *Config) { c.Job = "" }), 2 * time.Second,
			`natsstore: Job must be 1..64 characters of [A-Za-z0-9_-], got ""`},
		{"dotted job", with(func(c *Config) { c.Job = "a.b" }), 2 * time.Second,
			`natsstore: Job must be 1..64 characters of [A-Za-z0-9_-], got "a.b"`},
		{"long job", with(func(c *Config) { c.Job = strings.Repeat("j", 65) }), 2 * time.Second,
			`natsstore: Job must be 1..64 characters of [A-Za-z0-9_-], got "` + strings.Repeat("j", 65) + `"`},
		{"history 65", with(func(c *Config) { c.History = 65 }), 2 * time.Second,
			"natsstore: History must be 0..64 (revisions kept per key; 0 means 1), got 65"},
		{"history -1", with(func(c *Config) { c.History = -1 }), 2 * time.Second,
			"natsstore: History must be 0..64 (revisions kept per key; 0 means 1), got -1"},
		{"replicas 2", with(func(c *Config) { c.Replicas = 2 }), 2 * time.Second,
			"natsstore: Replicas must be 1, 3 or 5, got 2"},
		{"replicas -1", with(func(c *Config) { c.Replicas = -1 }), 2 * time.Second,
			"natsstore: Replicas must be 1, 3 or 5, got -1"},
		{"user and token", with(func(c *Config) { c.Credentials = Credentials{Username: "u", Password: "p", Token: "t"} }), 2 * time.Second,
			"natsstore: Credentials: set exactly one of Username+Password, Token or CredsFile"},
		{"token and creds", with(func(c *Config) { c.Credentials = Credentials{Token: "t", CredsFile: "f"} }), 2 * time.Second,
			"natsstore: Credentials: set exactly one of Username+Password, Token or CredsFile"},
		{"user without password", with(func(c *Config) { c.Credentials = Credentials{Username: "u"} }), 2 * time.Second,
			"natsstore: Credentials: set exactly one of Username+Password, Token or CredsFile"},
		{"password without user", with(func(c *Config) { c.Credentials = Credentials{Password: "p"} }), 2 * time.Second,
			"natsstore: Credentials: set exactly one of Username+Password, Token or CredsFile"},
		{"cert without key", with(func(c *Config) { c.TLS = &TLS{ClientCert: "c.pem"} }), 2 * time.Second,
			"natsstore: TLS: ClientCert and ClientKey must be set together"},
		{"key without cert", with(func(c *Config) { c.TLS = &TLS{RootCA: "ca", ClientKey: "k.pem"} }), 2 * time.Second,
			"natsstore: TLS: ClientCert and ClientKey must be set together"},
		{"short lease", ok, 1999 * time.Millisecond,
			"natsstore: leaseTTL must be >= 2s (NATS expiry markers have one-second granularity), got 1.999s"},
		{"zero lease", ok, 0,
			"natsstore: leaseTTL must be >= 2s (NATS expiry markers have one-second granularity), got 0s"},
		{"first violation wins", Config{Job: "a.b", Replicas: 7}, 0,
			"natsstore: Servers: at least one server URL is required (or an established connection in Conn)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := New(tc.cfg, tc.lease)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if st.LeaseTTL() != tc.lease || st.MaxValueSize() != 524288 {
					t.Fatalf("LeaseTTL %s MaxValueSize %d", st.LeaseTTL(), st.MaxValueSize())
				}
				_ = st.Close()
				return
			}
			var e *coordination.Error
			if !asError(err, &e) || e.Kind != coordination.Fatal || e.Reason != tc.want {
				t.Fatalf("New error = %v, want Fatal %q", err, tc.want)
			}
		})
	}
}

// asError is errors.As for *coordination.Error.
func asError(err error, target **coordination.Error) bool {
	e, ok := err.(*coordination.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestConfigRedactsSecrets(t *testing.T) {
	cfgs := map[string]Config{
		"user": {Servers: []string{"nats://svc:urlsecret@h:4222"}, Job: "j",
			Credentials: Credentials{Username: "svc", Password: "hunter2"},
			TLS:         &TLS{RootCA: "/etc/ca.pem", ClientCert: "/etc/c.pem", ClientKey: "/etc/k.pem"}},
		"token":     {Servers: []string{"tls://h:4222"}, Job: "j", Credentials: Credentials{Token: "hunter2"}},
		"url token": {Servers: []string{"nats://a:4222", "nats://hunter2@h:4222"}, Job: "j"},
		"url user":  {Servers: []string{"nats://svc:urlsecret@h:4222"}, Job: "j", Credentials: Credentials{Username: "svc", Password: "hunter2"}},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			var logBuf bytes.Buffer
			slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", cfg, "creds", cfg.Credentials)
			renders := map[string]string{
				"String":        cfg.String(),
				"GoString":      cfg.GoString(),
				"%v":            fmt.Sprintf("%v", cfg),
				"%+v":           fmt.Sprintf("%+v", cfg),
				"%#v":           fmt.Sprintf("%#v", cfg),
				"%v creds":      fmt.Sprintf("%v", cfg.Credentials),
				"%#v creds":     fmt.Sprintf("%#v", cfg.Credentials),
				"%v pointer":    fmt.Sprintf("%v", &cfg),
				"slog LogValue": logBuf.String(),
			}
			for how, text := range renders {
				for _, leak := range []string{"hunter2", "urlsecret"} {
					if strings.Contains(text, leak) {
						t.Errorf("%s leaks %q: %s", how, leak, text)
					}
				}
				noCreds := cfg.Credentials == Credentials{}
				if !strings.Contains(text, "<redacted>") && !(noCreds && strings.Contains(how, "creds")) {
					t.Errorf("%s does not say <redacted>: %s", how, text)
				}
				if name == "user" && !strings.Contains(text, "svc") {
					t.Errorf("%s hides the username: %s", how, text)
				}
				if name == "user" && !strings.Contains(how, "creds") && !strings.Contains(text, "/etc/ca.pem") {
					t.Errorf("%s hides a path: %s", how, text)
				}
			}
		})
	}
}

func TestCredentialsDescribe(t *testing.T) {
	tests := []struct {
		cr   Credentials
		want string
	}{
		{Credentials{Username: "svc", Password: "p"}, `user "svc"`},
		{Credentials{Token: "t"}, "token"},
		{Credentials{CredsFile: "/x/a.creds"}, `creds file "/x/a.creds"`},
		{Credentials{}, "no credentials"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.cr.describe(); got != tc.want {
				t.Fatalf("describe = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://TOKEN@h:4222", "nats://<redacted>@h:4222"},
		{"nats://svc:pw@h:4222", "nats://<redacted>@h:4222"},
		{"tls://u:p%40ss@h", "tls://<redacted>@h"},
		{"nats://u:p@ss@h:1", "nats://<redacted>@h:1"},
		{"nats://TOK EN@h:%zz", "nats://<redacted>@h:%zz"}, // does not parse
		{"nats://:pw@h", "nats://<redacted>@h"},
		{"TOKEN@h:4222", "<redacted>@h:4222"},
		{"ws://TOKEN@h/p", "ws://<redacted>@h/p"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := RedactURL(tc.in); got != tc.want {
				t.Fatalf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactURLProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		scheme := rapid.SampledFrom([]string{"nats://", "tls://"}).Draw(t, "scheme")
		userinfo := rapid.String().Draw(t, "userinfo") // anything, "@" and "://" included
		host := rapid.StringMatching(`[a-z0-9.-]{1,20}(:[0-9]{1,5})?(/[a-z0-9/]{0,8})?`).Draw(t, "host")
		want := scheme + redacted + "@" + host
		if got := RedactURL(scheme + userinfo + "@" + host); got != want {
			t.Fatalf("RedactURL(%q) = %q, want %q", scheme+userinfo+"@"+host, got, want)
		}
		if got := RedactURL(scheme + host); got != scheme+host {
			t.Fatalf("RedactURL(%q) = %q changed a URL without userinfo", scheme+host, got)
		}
	})
}

func TestConfigRendersConnAndOptions(t *testing.T) {
	cfg := Config{Conn: &nats.Conn{}, Job: "j"}
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", cfg)
	with := Config{Servers: []string{"nats://h:4222"}, Job: "j", Options: []nats.Option{nats.Name("a"), nats.Name("b")}}
	for _, tc := range []struct{ what, text, want string }{
		{"String with Conn", cfg.String(), "Options:0 Conn:<set>}"},
		{"GoString with Conn", cfg.GoString(), "Conn:&nats.Conn{}}"},
		{"LogValue with Conn", logBuf.String(), "cfg.conn=<set>"},
		{"String with Options", with.String(), "Options:2 Conn:<nil>}"},
		{"GoString with Options", with.GoString(), "Options:[]nats.Option{/* 2 */}, Conn:nil}"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("%s = %s; want it to contain %s", tc.what, tc.text, tc.want)
		}
	}
}
