package coordctl

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store/natsstore"
)

// connFlags are the connection flags every subcommand takes; they mirror
// natsstore.Config.
type connFlags struct {
	servers      []string
	job          string
	user         string
	passwordFile string
	tokenFile    string
	creds        string
	tlsCA        string
	tlsCert      string
	tlsKey       string
	lease        time.Duration
	timeout      time.Duration
}

// register adds the connection flags to fs.
func (c *connFlags) register(fs *flag.FlagSet) {
	fs.Func("nats", "NATS server URL, nats:// or tls://; repeat the flag or separate URLs with commas (required)", func(v string) error {
		for u := range strings.SplitSeq(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.servers = append(c.servers, u)
			}
		}
		return nil
	})
	fs.StringVar(&c.job, "job", "", "the job's name, natsstore.Config.Job (required)")
	fs.StringVar(&c.user, "user", "", "user name; needs -password-file")
	fs.StringVar(&c.passwordFile, "password-file", "", "file holding the password of -user")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding an authentication token")
	fs.StringVar(&c.creds, "creds", "", "NATS .creds file (user JWT and NKey seed)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA bundle that verifies the servers")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM client certificate for mutual TLS; needs -tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM key of -tls-cert")
	fs.DurationVar(&c.lease, "lease", coordination.DefaultConfig().LeaseDuration, "the job's LeaseDuration (its lease bucket's TTL)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound of the command's store operations (of each refresh for watch)")
}

// config checks the flags and returns the store configuration: read-only
// on buckets (ExistingOnly), so a mistyped -job never creates a job. Errors
// name the flag and the fix; secrets never appear in them.
func (c *connFlags) config() (natsstore.Config, error) {
	cfg := natsstore.Config{Servers: c.servers, Job: c.job, ExistingOnly: true}
	switch {
	case len(c.servers) == 0:
		return cfg, errors.New("-nats is required: the URL of a NATS server of the job, for example -nats nats://127.0.0.1:4222")
	case c.job == "":
		return cfg, errors.New("-job is required: the job's name, as in natsstore.Config.Job")
	case (c.user == "") != (c.passwordFile == ""):
		return cfg, errors.New("-user and -password-file go together: pass both or neither")
	case c.lease < natsstore.MinLeaseTTL:
		return cfg, fmt.Errorf("-lease must be at least %s (the job's LeaseDuration), got %s", natsstore.MinLeaseTTL, c.lease)
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
	for i, s := range c.servers {
		if !strings.HasPrefix(s, "nats://") && !strings.HasPrefix(s, "tls://") {
			return cfg, fmt.Errorf("-nats: URL %d must start with nats:// or tls://, got %q", i+1, natsstore.RedactURL(s))
		}
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

// open builds the store for the flags; it does no I/O.
func (c *connFlags) open() (*natsstore.Store, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	st, err := natsstore.New(cfg, c.lease)
	if err != nil {
		return nil, fmt.Errorf("connection flags: %w", err)
	}
	return st, nil
}

// where names the job and its servers for messages, without secrets.
func (c *connFlags) where() string {
	urls := make([]string, len(c.servers))
	for i, s := range c.servers {
		urls[i] = natsstore.RedactURL(s)
	}
	return fmt.Sprintf("job %q on %s (-lease %s)", c.job, strings.Join(urls, ","), c.lease)
}
