package pgstore

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
)

// boundSettings are the server settings the store bounds every session by
// (LeaseTTL/2, see Store.poolConfig): a DSN may lower them, never lift them.
var boundSettings = []string{"statement_timeout", "idle_in_transaction_session_timeout"}

// dsnParam returns the value of connection parameter key in dsn (a URL's
// query or a keyword/value pair) and whether it is there. It reads what
// pgxpool.ParseConfig consumes without keeping (pool_max_conns).
func dsnParam(dsn, key string) (string, bool) {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", false
		}
		q := u.Query()
		return q.Get(key), q.Has(key)
	}
	val, found := "", false
	for k, v := range keywordPairs(dsn) {
		if k == key {
			val, found = v, true
		}
	}
	return val, found
}

// keywordPairs yields the pairs of a keyword/value connection string
// ("host=h password='it\'s' user=u"): values may be single-quoted with
// backslash escapes.
func keywordPairs(s string) func(yield func(k, v string) bool) {
	return func(yield func(k, v string) bool) {
		i := 0
		skip := func() {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
				i++
			}
		}
		for {
			skip()
			if i >= len(s) {
				return
			}
			start := i
			for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
				i++
			}
			key := s[start:i]
			skip()
			if i >= len(s) || s[i] != '=' {
				continue
			}
			i++
			skip()
			var v strings.Builder
			if i < len(s) && s[i] == '\'' {
				i++
				for i < len(s) && s[i] != '\'' {
					if s[i] == '\\' && i+1 < len(s) {
						i++
					}
					v.WriteByte(s[i])
					i++
				}
				i = min(i+1, len(s))
			} else {
				for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
					if s[i] == '\\' && i+1 < len(s) {
						i++
					}
					v.WriteByte(s[i])
					i++
				}
			}
			if !yield(key, v.String()) {
				return
			}
		}
	}
}

// applyPoolSize sets the pool's size: Config.MaxConns, else the DSN's
// pool_max_conns, else defaultMaxConns. Both set and different is Fatal.
func (c Config) applyPoolSize(pcfg *pgxpool.Config) error {
	v, set := dsnParam(c.DSN, "pool_max_conns")
	switch {
	case set && c.MaxConns != 0 && pcfg.MaxConns != c.MaxConns:
		return coordination.Errorf(coordination.Fatal, "pgstore: MaxConns is %d but the DSN sets pool_max_conns=%s; set the pool size in one place", c.MaxConns, v)
	case set:
		return nil // pgxpool.ParseConfig read it
	}
	pcfg.MaxConns = c.maxConns()
	return nil
}

// checkBounds rejects a DSN whose statement_timeout or
// idle_in_transaction_session_timeout (as a parameter of its own or in
// options' -c switches) is 0 (no bound) or above bound: the store relies
// on them to keep a stuck call from holding the job's write lock past
// half a lease (docs/protocol.md, "Stores"). A lower value is kept.
func (c Config) checkBounds(rp map[string]string, bound time.Duration) error {
	given := map[string]string{}
	for _, name := range boundSettings {
		if v, ok := rp[name]; ok {
			given[name] = v
		}
	}
	for name, v := range optionSettings(rp["options"]) {
		given[name] = v
	}
	for _, name := range boundSettings {
		v, ok := given[name]
		if !ok {
			continue
		}
		d, err := parseDurationSetting(v)
		switch {
		case err != nil:
			return coordination.Errorf(coordination.Fatal, "pgstore: the DSN's %s=%q does not parse as a time (%v); remove it from the DSN, the store sets %s (half the lease TTL)", name, v, err, bound)
		case d == 0:
			return coordination.Errorf(coordination.Fatal, "pgstore: the DSN sets %s=%s, which turns the bound off; the store needs every statement bounded by half the lease TTL (%s) so that a stuck call cannot hold the job's write lock: remove it from the DSN (or set a value up to %s)", name, v, bound, bound)
		case d > bound:
			return coordination.Errorf(coordination.Fatal, "pgstore: the DSN sets %s=%s, above the store's bound of half the lease TTL (%s); remove it from the DSN (or set a value up to %s)", name, v, bound, bound)
		}
	}
	return nil
}

// optionSettings yields the bounded settings set by an options parameter
// ("-c statement_timeout=0", "-cstatement_timeout=0",
// "--statement_timeout=0").
func optionSettings(options string) map[string]string {
	out := map[string]string{}
	fields := strings.Fields(options)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-c" && i+1 < len(fields):
			i++
			f = fields[i]
		case strings.HasPrefix(f, "--"):
			f = f[2:]
		case strings.HasPrefix(f, "-c"):
			f = f[2:]
		default:
			continue
		}
		name, v, ok := strings.Cut(f, "=")
		name = strings.ReplaceAll(strings.ToLower(name), "-", "_")
		if ok {
			out[name] = v
		}
	}
	return out
}

// parseDurationSetting reads a PostgreSQL time setting: a number of
// milliseconds, or a number with a unit (us, ms, s, min, h, d).
func parseDurationSetting(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.' || v[end] == '-' || v[end] == '+') {
		end++
	}
	n, err := strconv.ParseFloat(v[:end], 64)
	if err != nil {
		return 0, err
	}
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	unit, ok := units[strings.TrimSpace(v[end:])]
	if !ok {
		return 0, coordination.Errorf(coordination.Fatal, "unknown unit %q", strings.TrimSpace(v[end:]))
	}
	if n < 0 {
		return 0, coordination.Errorf(coordination.Fatal, "negative")
	}
	if n*float64(unit) > float64(1<<62) {
		return 1 << 62, nil
	}
	return time.Duration(n * float64(unit)), nil
}
