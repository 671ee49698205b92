package pgstore

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/naming"
)

// MinLeaseTTL is the shortest lease TTL [New] accepts, the floor of
// coordination.Config.LeaseDuration: expiry is timed by the server's clock
// to the microsecond, so the store itself needs no coarser floor.
const MinLeaseTTL = 300 * time.Millisecond

// maxJobLen is the longest Job name: the schema name coordination_<Job>
// must fit PostgreSQL's 63-byte identifiers.
const maxJobLen = 50

// maxIdentLen is the longest identifier PostgreSQL keeps (NAMEDATALEN-1).
const maxIdentLen = 63

// defaultMaxConns is the pool size when Config.MaxConns is 0.
const defaultMaxConns = 4

// DefaultRetention is how long the change log keeps a change when
// Config.Retention is 0.
const DefaultRetention = 10 * time.Minute

// Config says which database to use, how to connect and which job's schema
// to use. The zero value is not valid: Job and either DSN or Pool are
// required.
type Config struct {
	// DSN is the connection string: a URL
	// ("postgres://user:password@host:5432/db?sslmode=verify-full") or
	// keyword/value pairs ("host=db user=svc sslmode=require"), as libpq
	// and pgx read them, PG* environment variables and ~/.pgpass included.
	// TLS is chosen with sslmode (disable, prefer, require, verify-ca,
	// verify-full) and sslrootcert, sslcert, sslkey. connect_timeout (in
	// seconds) bounds each connection attempt, dial, TLS and
	// authentication; without it the store uses a sixth of the lease TTL,
	// between 1s and 5s (5s with coordination.Config's default lease), so
	// a server that does not answer fails an operation within it even on a
	// context without a deadline. The store never prints the DSN with
	// its password (see [RedactDSN]).
	DSN string
	// Password, when set, replaces the DSN's password, so that it can come
	// from a secret file instead of the DSN. "" keeps the DSN's (or the
	// environment's, or ~/.pgpass's).
	Password string
	// Job names the job; its records live in the schema coordination_<Job>.
	// 1..50 bytes of [A-Za-z0-9_-] (the schema name must fit PostgreSQL's
	// 63-byte identifiers).
	Job string
	// MaxConns is the pool size of the connections the store opens; 0
	// means the DSN's pool_max_conns, or 4 without it (both set and
	// different is Fatal). Watches wait on one more connection of their
	// own (LISTEN), outside the pool.
	MaxConns int32
	// Retention is how long the job's change log keeps each change; 0
	// means [DefaultRetention] (10 minutes). Watches read the log, so a
	// watch that falls further behind than this breaks (Retryable) and its
	// owner re-watches; an audit (coordctl audit) sees this much of the
	// past. Rows older than this are removed by every store handle of the
	// job, a bounded batch per pass. It applies to the store's own pruning;
	// handles with other settings prune by theirs.
	Retention time.Duration
	// ExistingOnly makes the store use the job's schema without ever
	// creating it: a missing schema is Fatal naming it. For tools that
	// inspect or repair a job (coordctl) and must not create one by
	// mistake; such a store also never sweeps expired keys or prunes the
	// change log (it may hold read-only grants). false (the default)
	// creates the schema on first use.
	ExistingOnly bool
	// Owner is the role that must own the job's schema and every table,
	// sequence and function in it. "" means the role the store connects
	// as (current_user), or, with ExistingOnly, the schema's owner (its
	// objects must all share it). The store refuses a schema or object
	// owned by another role, naming both (docs/postgres-security.md): a
	// function of someone else's would run as this store's role. A store
	// that creates the schema creates it AUTHORIZATION Owner and its
	// objects as Owner (SET ROLE: the connecting role must be a member of
	// it), so that several login roles of one team can share a job.
	Owner string
	// Logger receives the store's few log lines (a lost LISTEN connection,
	// a failing sweep). DSNs in them are redacted. nil discards them.
	Logger *slog.Logger
	// Pool is an established pool for the store to use instead of opening
	// one from DSN; then DSN, Password and MaxConns must be empty. The
	// caller keeps ownership: [Store.Close] leaves it open, so close it
	// after the store. Its own settings apply (the store's statement
	// timeout is not set on it). nil means open a pool from DSN.
	Pool *pgxpool.Pool
}

// redacted replaces a secret in every rendering of a Config.
const redacted = "<redacted>"

// Validate checks the configuration rules of New (everything but the lease
// TTL) and returns the first violation as a Fatal *coordination.Error
// naming the field. It does no I/O and never mutates c.
func (c Config) Validate() error {
	if c.Pool != nil && (c.DSN != "" || c.Password != "" || c.MaxConns != 0) {
		return coordination.Errorf(coordination.Fatal, "pgstore: Pool is set, so DSN, Password and MaxConns must be empty (they configure a pool the store opens); set Pool or those, not both")
	}
	if c.Pool == nil {
		if c.DSN == "" {
			return coordination.Errorf(coordination.Fatal, "pgstore: DSN is required (for example postgres://user@host:5432/db?sslmode=verify-full), or an established pool in Pool")
		}
		if _, err := pgxpool.ParseConfig(c.DSN); err != nil {
			return coordination.Errorf(coordination.Fatal, "pgstore: DSN %s does not parse: %s", RedactDSN(c.DSN), redactedReason(err, c))
		}
	}
	if !validJob(c.Job) {
		return coordination.Errorf(coordination.Fatal, "pgstore: Job must be 1..%d characters of [A-Za-z0-9_-], got %q", maxJobLen, c.Job)
	}
	if len(c.Owner) > maxIdentLen || strings.IndexByte(c.Owner, 0) >= 0 {
		return coordination.Errorf(coordination.Fatal, "pgstore: Owner must be a role name of at most %d bytes without NUL bytes, got %q", maxIdentLen, c.Owner)
	}
	if c.MaxConns < 0 {
		return coordination.Errorf(coordination.Fatal, "pgstore: MaxConns must be >= 0 (0 means %d), got %d", defaultMaxConns, c.MaxConns)
	}
	if c.Retention < 0 {
		return coordination.Errorf(coordination.Fatal, "pgstore: Retention must be >= 0 (0 means %s), got %s", DefaultRetention, c.Retention)
	}
	return nil
}

// validJob reports whether job is 1..maxJobLen bytes of [A-Za-z0-9_-].
func validJob(job string) bool { return naming.Check("Job", job, maxJobLen) == "" }

// retention returns the effective change-log retention.
func (c Config) retention() time.Duration {
	if c.Retention == 0 {
		return DefaultRetention
	}
	return c.Retention
}

// maxConns returns the effective pool size.
func (c Config) maxConns() int32 {
	if c.MaxConns == 0 {
		return defaultMaxConns
	}
	return c.MaxConns
}

// secretKeys are the connection parameters RedactDSN masks.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// RedactDSN returns the connection string s with every password masked as
// <redacted>: the password of a URL's userinfo
// ("postgres://svc:pw@host/db" becomes "postgres://svc:<redacted>@host/db"),
// password and sslpassword query parameters, and password= and
// sslpassword= pairs of the keyword/value form. A URL that does not parse
// loses its whole userinfo. Any "scheme://" string is taken for a URL,
// whatever the scheme and its case ("POSTGRES://svc:pw@host"). The store
// prints DSNs only through it.
func RedactDSN(s string) string {
	if isURL(s) {
		return redactURL(s)
	}
	return redactKeywords(s)
}

// isURL reports whether s starts with a URL scheme ("postgres://",
// "Postgresql://", any letters): a keyword/value string has "=" or a space
// before any "://".
func isURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], "= \t\n'")
}

// redactURL masks the password in a URL connection string.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		scheme, rest, _ := strings.Cut(s, "://")
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = redacted + rest[at:]
		}
		if q := strings.Index(rest, "?"); q >= 0 {
			rest = rest[:q] + "?" + redacted
		}
		return scheme + "://" + rest
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), redacted)
	}
	q := u.Query()
	for k := range q {
		if secretKeys[strings.ToLower(k)] {
			q.Set(k, redacted)
		}
	}
	u.RawQuery = q.Encode()
	out := u.String()
	// url.URL escapes the brackets of the placeholder; keep it readable.
	return strings.ReplaceAll(strings.ReplaceAll(out, "%3Credacted%3E", redacted), url.QueryEscape(redacted), redacted)
}

// redactKeywords masks password values in a keyword/value connection
// string ("host=h password='it”s' user=u"); values may be single-quoted
// with backslash escapes.
func redactKeywords(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		// Copy whitespace.
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			b.WriteByte(s[i])
			i++
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' {
			i++
		}
		key := strings.TrimSpace(s[start:i])
		b.WriteString(s[start:i])
		for i < len(s) && s[i] == ' ' {
			b.WriteByte(' ')
			i++
		}
		if i >= len(s) || s[i] != '=' {
			continue
		}
		b.WriteByte('=')
		i++
		for i < len(s) && s[i] == ' ' {
			b.WriteByte(' ')
			i++
		}
		vstart := i
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, len(s))
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
				i++
			}
		}
		if secretKeys[strings.ToLower(key)] {
			b.WriteString(redacted)
		} else {
			b.WriteString(s[vstart:i])
		}
	}
	return b.String()
}

// redactedReason renders err without any secret of c: the texts of the
// DSN's and Config.Password's secrets are masked wherever they appear.
func redactedReason(err error, c Config) string {
	text := err.Error()
	for _, secret := range c.secrets() {
		text = strings.ReplaceAll(text, secret, redacted)
	}
	return text
}

// secrets returns the secrets of c as text (the passwords of the DSN and
// Config.Password), longest first, to mask in messages.
func (c Config) secrets() []string {
	var out []string
	if c.Password != "" {
		out = append(out, c.Password)
	}
	if cfg, err := pgxpool.ParseConfig(c.DSN); err == nil && c.DSN != "" && cfg.ConnConfig.Password != "" {
		out = append(out, cfg.ConnConfig.Password)
	}
	if isURL(c.DSN) {
		if u, err := url.Parse(c.DSN); err == nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// secret returns s, or <redacted> when s is set.
func secret(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// poolText renders Pool without its details: "<nil>" or "<set>".
func (c Config) poolText() string {
	if c.Pool == nil {
		return "<nil>"
	}
	return "<set>"
}

// String renders the configuration with every password redacted.
func (c Config) String() string {
	return fmt.Sprintf("pgstore.Config{DSN:%q Password:%q Job:%q MaxConns:%d Retention:%s ExistingOnly:%v Owner:%q Pool:%s}",
		RedactDSN(c.DSN), secret(c.Password), c.Job, c.MaxConns, c.Retention, c.ExistingOnly, c.Owner, c.poolText())
}

// GoString renders the configuration as Go syntax with every password
// redacted.
func (c Config) GoString() string {
	pool := "nil"
	if c.Pool != nil {
		pool = "&pgxpool.Pool{}"
	}
	return fmt.Sprintf("pgstore.Config{DSN:%q, Password:%q, Job:%q, MaxConns:%d, Retention:%d, ExistingOnly:%v, Owner:%q, Pool:%s}",
		RedactDSN(c.DSN), secret(c.Password), c.Job, c.MaxConns, c.Retention, c.ExistingOnly, c.Owner, pool)
}

// LogValue renders the configuration as a slog group with every password
// redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("dsn", RedactDSN(c.DSN)),
		slog.String("password", secret(c.Password)),
		slog.String("job", c.Job),
		slog.Int("max_conns", int(c.MaxConns)),
		slog.Duration("retention", c.Retention),
		slog.Bool("existing_only", c.ExistingOnly),
		slog.String("owner", c.Owner),
		slog.String("pool", c.poolText()),
	)
}
