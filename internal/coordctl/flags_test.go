package coordctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRejectsBadUsageNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"-nats", "nats://127.0.0.1:4222", "-job", "j"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, ExitUsage, "usage: coordctl [connection flags] <command>"},
		{"unknown command", []string{"stats"}, ExitUsage, `unknown command "stats"; the commands are status, watch, requeue, delete-job, audit`},
		{"no -nats", []string{"status", "-job", "j"}, ExitUsage, "-nats is required"},
		{"no -job", []string{"status", "-nats", "nats://h:1"}, ExitUsage, "-job is required"},
		{"bad scheme", []string{"status", "-nats", "http://u:pw@h:1", "-job", "j"}, ExitUsage, `Servers[0]: scheme must be nats:// or tls://, got "http://<redacted>@h:1"`},
		{"comma in a password", []string{"status", "-nats", "nats://h:2", "-nats", "nats://svc:s3cret,tail@h:1", "-job", "j"}, ExitUsage,
			`Servers[1]: the client splits it at commas into 2 URLs, and in URL 1 the URL does not parse (write a comma inside a password or token as %2C), got "nats://<redacted>@h:1"`},
		{"bad job", []string{"status", "-nats", "nats://h:1", "-job", "a.b"}, ExitUsage, "Job must be 1..64 characters"},
		{"user without password", append([]string{"status", "-user", "u"}, conn...), ExitUsage, "-user and -password-file go together"},
		{"two credentials", append([]string{"status", "-user", "u", "-password-file", pw, "-token-file", pw}, conn...), ExitUsage, "pass at most one of"},
		{"missing password file", append([]string{"status", "-user", "u", "-password-file", filepath.Join(dir, "nope")}, conn...), ExitUsage, "-password-file: open"},
		{"empty token file", append([]string{"status", "-token-file", empty}, conn...), ExitUsage, "-token-file: file " + empty + " is empty"},
		{"cert without key", append([]string{"status", "-tls-cert", "c.pem"}, conn...), ExitUsage, "-tls-cert and -tls-key go together"},
		{"no -lease: it is read from the job", append([]string{"status", "-lease", "30s"}, conn...), ExitUsage, "flag provided but not defined: -lease"},
		{"requeue without splits", append([]string{"requeue"}, conn...), ExitUsage, "name the splits to requeue or pass -all-quarantined"},
		{"requeue a bad id", append([]string{"requeue"}, append(conn, "a.b")...), ExitUsage, `argument "a.b"`},
		{"watch with a zero interval", append([]string{"watch", "-interval", "0s"}, conn...), ExitUsage, "-interval must be positive"},
		{"no store", []string{"status", "-job", "j"}, ExitUsage, "-store or -nats is required"},
		{"two stores", []string{"status", "-store", "postgres://svc:s3cret@db/x", "-nats", "nats://h:1", "-job", "j"}, ExitUsage, "pass one store"},
		{"a NATS flag on postgres", []string{"status", "-store", "postgres://svc@db/x", "-token-file", pw, "-job", "j"}, ExitUsage, "on PostgreSQL put the user and TLS in the URL"},
		{"postgres without a job", []string{"status", "-store", "postgres://svc:s3cret@db/x"}, ExitUsage, "-job is required"},
		{"postgres with a bad job", []string{"status", "-store", "postgres://svc@db/x", "-job", "a.b"}, ExitUsage, "Job must be 1..50 characters"},
		{"postgres with a bad URL", []string{"status", "-store", "postgres://svc:s3cret@db:port/x", "-job", "j"}, ExitUsage, "postgres://<redacted>@db:port/x"},
		{"unreachable postgres", []string{"status", "-store", "postgres://svc:s3cret@127.0.0.1:1/x?connect_timeout=1", "-password-file", pw, "-job", "j"}, ExitError, "postgres://svc:<redacted>@127.0.0.1:1/x"},
		{"-owner on NATS", append([]string{"status", "-owner", "svc"}, conn...), ExitUsage, "-owner is a PostgreSQL flag"},
		{"two postgres URLs", []string{"status", "-store", "postgres://svc:s3cret@db/x", "-store", "postgresql://svc:s3cret@db/y", "-job", "j"}, ExitUsage, "-store names 2 PostgreSQL databases; give one"},
		{"keyword/value postgres", []string{"status", "-store", "host=db port=notaport user=svc password=s3cret", "-job", "j"}, ExitUsage, "password=<redacted>"},
		{"keyword/value postgres, quoted", []string{"status", "-store", "host=127.0.0.1 port=1 user=svc password='s3cret x' connect_timeout=1", "-job", "j"}, ExitError, "password=<redacted>"},
		{"POSTGRES in capitals", []string{"status", "-store", "POSTGRES://svc:s3cret@db/x", "-job", "j"}, ExitUsage, "postgres://svc:<redacted>@db/x"},
		{"-store nats:// is -nats", []string{"status", "-store", "http://u:s3cret@h:1", "-job", "j"}, ExitUsage, `-job or -nats: coordination error (fatal): natsstore: Servers[0]: scheme must be nats:// or tls://, got "http://<redacted>@h:1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(t.Context(), tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("Run(%q) = %d, stderr %q; want %d containing %q", tt.args, code, errb.String(), tt.code, tt.want)
			}
			if strings.Contains(errb.String()+out.String(), "s3cret") {
				t.Fatalf("a secret was printed: %q", errb.String())
			}
		})
	}
}

func TestFlagsGoBeforeOrAfterTheCommand(t *testing.T) {
	// A job name that Validate refuses stops each run before any I/O, so
	// the error shows which flags were read: every placement must read
	// -job (and -nats: without it the error would be "-store or -nats is
	// required").
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"before", []string{"-nats", "nats://h:1", "-job", "a.b", "status"}, "Job must be 1..64 characters"},
		{"both sides", []string{"-nats", "nats://h:1", "status", "-json", "-job", "a.b"}, "Job must be 1..64 characters"},
		{"after the ids", []string{"requeue", "s-1", "s-2", "-nats", "nats://h:1", "-job", "a.b"}, "Job must be 1..64 characters"},
		{"between the ids", []string{"requeue", "s-1", "-nats", "nats://h:1", "s-2", "-job", "a.b"}, "Job must be 1..64 characters"},
		{"ids after --", []string{"-nats", "nats://h:1", "-job", "j", "requeue", "--", "-x", "a.b"}, `argument "a.b"`},
		{"a command flag before the command", []string{"-json", "status"}, "before the command only the connection flags are accepted"},
		{"flags but no command", []string{"-nats", "nats://h:1", "-job", "j"}, "usage: coordctl [connection flags] <command>"},
		{"unknown command after flags", []string{"-nats", "nats://h:1", "stats"}, `unknown command "stats"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := Run(t.Context(), tt.args, &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), tt.want) {
				t.Fatalf("Run(%q) = %d, stderr %q; want %d containing %q", tt.args, code, errb.String(), ExitUsage, tt.want)
			}
		})
	}
	for _, help := range [][]string{{"-h"}, {"help"}, {"-nats", "nats://h:1", "-h"}, {"-nats", "nats://h:1", "status", "-h"}} {
		var out, errb bytes.Buffer
		if code := Run(t.Context(), help, &out, &errb); code != ExitOK || !strings.Contains(errb.String(), "usage: coordctl") {
			t.Fatalf("Run(%q) = %d, stderr %q; want the usage and exit 0", help, code, errb.String())
		}
	}
	// The usage speaks of both stores: delete-job drops a schema on
	// PostgreSQL, not buckets.
	var out, errb bytes.Buffer
	Run(t.Context(), []string{"-h"}, &out, &errb)
	if !strings.Contains(errb.String(), "remove the job's buckets (NATS) or schema (PostgreSQL)") {
		t.Fatalf("the usage describes delete-job for NATS only:\n%s", errb.String())
	}
}

func TestConfigReadsSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := connFlags{servers: []string{"nats://a:1", "nats://b:2"}, job: "j", user: "svc", passwordFile: pw, timeout: testLease}
	cfg, err := c.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Credentials.Username != "svc" || cfg.Credentials.Password != "s3cret" || !cfg.ExistingOnly || len(cfg.Servers) != 2 {
		t.Fatalf("config = %+v, want user svc with the file's password, ExistingOnly, two servers", cfg)
	}
	if strings.Contains(cfg.String(), "s3cret") || strings.Contains(c.where(), "s3cret") {
		t.Fatal("the password shows in the rendered configuration")
	}
}
