package coordctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
	"github.com/spate-go/coordination/store/pgstore"
)

// connFlags are the connection flags every subcommand takes; they mirror
// natsstore.Config, and -store names a PostgreSQL database instead.
type connFlags struct {
	servers      []string
	pgURL        string // -store postgres://... (or keyword/value pairs); "" for NATS
	pgExtra      int    // further PostgreSQL -store values, refused by check
	owner        string // -owner: pgstore.Config.Owner
	job          string
	user         string
	passwordFile string
	tokenFile    string
	creds        string
	tlsCA        string
	tlsCert      string
	tlsKey       string
	timeout      time.Duration
}

// register adds the connection flags to fs.
func (c *connFlags) register(fs *flag.FlagSet) {
	fs.Func("store", "the job's store as a URL: nats://host:4222 or tls://... (NATS JetStream KV, as -nats), or postgres://user@host:5432/db?sslmode=verify-full or 'host=... user=...' pairs (PostgreSQL; the password from -password-file, PGPASSWORD or ~/.pgpass; never printed)", func(v string) error {
		// Never an error here: the flag package would print the value,
		// password and all; check reports a second database instead.
		if isPostgres(v) {
			if c.pgURL != "" {
				c.pgExtra++
				return nil
			}
			c.pgURL = v
			return nil
		}
		return fs.Lookup("nats").Value.Set(v)
	})
	fs.Func("nats", "NATS server URL, nats:// or tls://; repeat the flag or separate URLs with commas (required)", func(v string) error {
		// Kept whole: natsstore splits it at commas as the client does and
		// can then redact a password a comma cut.
		c.servers = append(c.servers, v)
		return nil
	})
	fs.StringVar(&c.job, "job", "", "the job's name, natsstore.Config.Job (required)")
	fs.StringVar(&c.owner, "owner", "", "PostgreSQL: the role that must own the job's schema and everything in it (pgstore.Config.Owner; default: the schema's owner); the job is refused otherwise")
	fs.StringVar(&c.user, "user", "", "user name; needs -password-file")
	fs.StringVar(&c.passwordFile, "password-file", "", "file holding the password of -user")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding an authentication token")
	fs.StringVar(&c.creds, "creds", "", "NATS .creds file (user JWT and NKey seed)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA bundle that verifies the servers")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM client certificate for mutual TLS; needs -tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM key of -tls-cert")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound of the command's store operations (of each refresh for watch)")
}

// isPostgres reports whether v names a PostgreSQL database: a
// postgres:// or postgresql:// URL (any case), or a keyword/value
// connection string ("host=db user=svc"), which a NATS URL never is.
func isPostgres(v string) bool {
	l := strings.ToLower(v)
	if strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") {
		return true
	}
	return strings.Contains(v, "=") && !strings.Contains(v, "://")
}

// check checks the flags of either store. Errors name the flag and the
// fix; secrets never appear in them.
func (c *connFlags) check() error {
	if c.pgURL == "" {
		_, err := c.config()
		return err
	}
	_, err := c.pgConfig()
	return err
}

// pgConfig checks the flags for a PostgreSQL store and returns its
// configuration: ExistingOnly, so a mistyped -job never creates a job (and
// coordctl never sweeps or prunes).
func (c *connFlags) pgConfig() (pgstore.Config, error) {
	cfg := pgstore.Config{DSN: c.pgURL, Job: c.job, ExistingOnly: true, Owner: c.owner}
	switch {
	case c.pgExtra > 0:
		return cfg, fmt.Errorf("-store names %d PostgreSQL databases; give one", c.pgExtra+1)
	case len(c.servers) > 0:
		return cfg, errors.New("-store names a PostgreSQL database, so -nats must not be given; pass one store")
	case c.job == "":
		return cfg, errors.New("-job is required: the job's name, as in pgstore.Config.Job")
	case c.user != "" || c.tokenFile != "" || c.creds != "" || c.tlsCA != "" || c.tlsCert != "" || c.tlsKey != "":
		return cfg, errors.New("-user, -token-file, -creds and -tls-* are NATS flags; on PostgreSQL put the user and TLS in the URL (postgres://user@host/db?sslmode=verify-full&sslrootcert=ca.pem) and the password in -password-file")
	case c.timeout <= 0:
		return cfg, fmt.Errorf("-timeout must be positive, got %s", c.timeout)
	}
	if c.passwordFile != "" {
		pw, err := readSecret("-password-file", c.passwordFile)
		if err != nil {
			return cfg, err
		}
		cfg.Password = pw
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("-job or -store: %w", err)
	}
	return cfg, nil
}

// config checks the flags and returns the store configuration: read-only
// on buckets (ExistingOnly), so a mistyped -job never creates a job. Errors
// name the flag and the fix; secrets never appear in them.
func (c *connFlags) config() (natsstore.Config, error) {
	cfg := natsstore.Config{Servers: c.servers, Job: c.job, ExistingOnly: true}
	switch {
	case len(c.servers) == 0:
		return cfg, errors.New("-store or -nats is required: the URL of the job's store, for example -store nats://127.0.0.1:4222 or -store postgres://svc@db:5432/pipelines")
	case c.job == "":
		return cfg, errors.New("-job is required: the job's name, as in natsstore.Config.Job")
	case (c.user == "") != (c.passwordFile == ""):
		return cfg, errors.New("-user and -password-file go together: pass both or neither")
	case c.owner != "":
		return cfg, errors.New("-owner is a PostgreSQL flag (the role owning the job's schema); NATS has no such owner")
	case c.timeout <= 0:
		return cfg, fmt.Errorf("-timeout must be positive, got %s", c.timeout)
	}
	kinds := 0
	for _, set := range []bool{c.user != "", c.tokenFile != "", c.creds != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return cfg, errors.New("pass at most one of -user/-password-file, -token-file and -creds")
	}
	if c.user != "" {
		pw, err := readSecret("-password-file", c.passwordFile)
		if err != nil {
			return cfg, err
		}
		cfg.Credentials = natsstore.Credentials{Username: c.user, Password: pw}
	}
	if c.tokenFile != "" {
		tok, err := readSecret("-token-file", c.tokenFile)
		if err != nil {
			return cfg, err
		}
		cfg.Credentials = natsstore.Credentials{Token: tok}
	}
	if c.creds != "" {
		cfg.Credentials = natsstore.Credentials{CredsFile: c.creds}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return cfg, errors.New("-tls-cert and -tls-key go together: pass both or neither")
	}
	if c.tlsCA != "" || c.tlsCert != "" {
		cfg.TLS = &natsstore.TLS{RootCA: c.tlsCA, ClientCert: c.tlsCert, ClientKey: c.tlsKey}
	}
	if err := cfg.Validate(); err != nil {
		// The flags checked above leave only -job and -nats to Validate.
		return cfg, fmt.Errorf("-job or -nats: %w", err)
	}
	return cfg, nil
}

// readSecret reads a password or token file; one trailing newline is
// dropped. The error names the flag and the path, never the content.
func readSecret(flagName, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", fmt.Errorf("%s: file %s is empty", flagName, path)
	}
	return s, nil
}

// jobStore is what coordctl needs of a job's store: the contract, the
// kept history of its writes (audit) and removing the job (delete-job).
// natsstore.Store and pgstore.Store both have them.
type jobStore interface {
	store.Store
	// WatchHistory replays the kept writes in revision order, then
	// SnapshotDone, then the live writes.
	WatchHistory(ctx context.Context, ks store.Keyspace, prefix string) (store.Watcher, error)
	// DeleteJob removes every record of the job.
	DeleteJob(ctx context.Context) error
}

var (
	_ jobStore = (*natsstore.Store)(nil)
	_ jobStore = (*pgstore.Store)(nil)
)

// open builds the store for the flags, with the job's own lease TTL read
// from the job within ctx and -timeout: an operator never has to know it.
func (c *connFlags) open(ctx context.Context) (jobStore, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.pgURL != "" {
		return c.openPostgres(ctx)
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	lease, err := natsstore.JobLeaseTTL(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// No lease bucket: there is nothing for the TTL to match. The
		// store names what is missing at its first operation, and
		// delete-job removes what remains.
		lease, err = natsstore.MinLeaseTTL, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lease TTL of %s: %w", c.where(), err)
	}
	st, err := natsstore.New(cfg, lease)
	if err != nil {
		return nil, fmt.Errorf("connection flags: %w", err)
	}
	return st, nil
}

// openPostgres builds the PostgreSQL store with the job's own lease TTL.
func (c *connFlags) openPostgres(ctx context.Context) (jobStore, error) {
	cfg, err := c.pgConfig()
	if err != nil {
		return nil, err
	}
	lease, err := pgstore.JobLeaseTTL(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the lease TTL of %s: %w", c.where(), err)
	}
	st, err := pgstore.New(cfg, lease)
	if err != nil {
		return nil, fmt.Errorf("connection flags: %w", err)
	}
	return st, nil
}

// storeKind names what holds the job, for messages: its NATS buckets or its
// PostgreSQL schema.
func (c *connFlags) storeKind() string {
	if c.pgURL != "" {
		return "schema coordination_" + c.job
	}
	return "buckets coordination_" + c.job + "_state and coordination_" + c.job + "_lease"
}

// where names the job and its servers for messages, without secrets.
func (c *connFlags) where() string {
	if c.pgURL != "" {
		return fmt.Sprintf("job %q on %s", c.job, pgstore.RedactDSN(c.pgURL))
	}
	urls := make([]string, len(c.servers))
	for i, s := range c.servers {
		urls[i] = natsstore.RedactURL(s)
	}
	return fmt.Sprintf("job %q on %s", c.job, strings.Join(urls, ","))
}
