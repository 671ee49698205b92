package natsstore

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/spate-go/coordination"
)

// MinLeaseTTL is the shortest lease TTL [New] accepts: NATS writes expiry
// markers with one-second granularity, so a shorter lease could not expire
// on time.
const MinLeaseTTL = 2 * time.Second

// maxHistory is the deepest history a NATS KV bucket keeps per key.
const maxHistory = 64

// maxJobLen is the longest Job name; bucket names stay well under the
// server's limits.
const maxJobLen = 64

// Config says where the NATS servers are, how to authenticate, and which
// job's buckets to use. The zero value is not valid: Job and either
// Servers or Conn are required.
type Config struct {
	// Servers are the server URLs, nats:// or tls://; at least one. The
	// client connects to one of them and fails over to the others. A URL
	// may carry credentials as userinfo ("nats://TOKEN@host",
	// "nats://user:password@host"); the store never prints it (see
	// [RedactURL]).
	Servers []string
	// Job names the job; it suffixes the bucket names
	// (coordination_<Job>_state and coordination_<Job>_lease). 1..64 bytes
	// of [A-Za-z0-9_-].
	Job string
	// Credentials authenticate the connection. The zero value means no
	// credentials.
	Credentials Credentials
	// TLS configures the root CA and an optional client certificate. nil
	// means plain connections (unless a URL uses tls://, which then verifies
	// against the system roots). A non-nil TLS requires TLS on every server.
	TLS *TLS
	// History is how many revisions of each key the state (Durable) bucket
	// this store creates keeps: 1..64; 0 means 1, only the latest. Deeper
	// history lets an audit (coordctl audit) check the fence on past
	// writes; it costs disk and memory on every server holding the bucket:
	// up to History times the latest values, about History × 400 bytes per
	// split for its split and progress records (a progress record is
	// rewritten at every commit, so 64 revisions cover about a minute of a
	// split's commits at the default 1s interval). The lease bucket always
	// keeps one. An existing bucket with another depth is adopted as it is
	// (with a warning), not changed.
	History int
	// ExistingOnly makes the store open the job's buckets without ever
	// creating or changing them, for tools that inspect or repair a job
	// (coordctl) and must not create one by mistake. When neither bucket
	// exists, the first operation is Fatal naming both (no such job); when
	// one is missing (a job half deleted by hand), the operations on it are
	// Fatal naming it and [Store.DeleteJob] removes the rest. Both errors
	// wrap jetstream.ErrBucketNotFound. A replicated bucket whose gets any
	// replica may answer (direct gets, as jetstream.CreateKeyValue makes
	// it) is read as it is rather than switched to leader reads. false
	// (the default) creates missing buckets.
	ExistingOnly bool
	// Replicas is the replica count of buckets this store creates: 1, 3 or
	// 5; 0 means 1. An existing bucket with another count is adopted with a
	// warning, not changed.
	Replicas int
	// Logger receives the store's few log lines: a lost connection and its
	// recovery (at most one loss line per connection per 10s; the next one
	// counts the losses held back), a bucket adopted with another replica
	// count, asynchronous client errors. Server URLs in them are redacted.
	// nil discards them.
	Logger *slog.Logger
	// Options are extra nats.go client options for the connection the
	// store dials, applied after the store's own, so an option given here
	// wins. The store's own: a name, the job's inbox prefix (see
	// [InboxPrefix]), its dialer, a timeout per network
	// step of at most a third of the lease, MaxReconnects(-1), a
	// reconnect wait and jitter of LeaseTTL/20 each (at most 2s), a ping
	// interval of LeaseTTL/3 (at least 10s), no reconnect buffer (operations
	// wait for the reconnect instead, see [Store]) and an asynchronous error
	// handler that logs. nil adds nothing. Must be empty when Conn is set.
	Options []nats.Option
	// Conn is an established connection for the store to use instead of
	// dialing Servers; then Servers, Credentials, TLS and Options must be
	// empty. The caller keeps ownership: [Store.Close] leaves it open, so
	// close it after the store. Its own settings apply; a reconnect wait
	// plus jitter of a third of the lease or more, or reconnects turned
	// off, is logged as a warning. Once it is closed, every operation is
	// Fatal. nil means dial Servers.
	Conn *nats.Conn
}

// Credentials authenticate the connection: set at most one kind. The zero
// value means no credentials. String, GoString and LogValue render a
// password or token as <redacted>.
type Credentials struct {
	// Username and Password authenticate with user and password; set both
	// or neither.
	Username, Password string
	// Token authenticates with a token.
	Token string
	// CredsFile is the path of a .creds file (a user JWT and its NKey seed).
	CredsFile string
}

// TLS names PEM files for TLS connections. All paths are read on the
// first connection attempt, not by New.
type TLS struct {
	// RootCA is the CA bundle that verifies the servers; "" means the
	// system roots.
	RootCA string
	// ClientCert and ClientKey are the client certificate and its key for
	// mutual TLS; set both or neither.
	ClientCert, ClientKey string
}

// Validate checks the configuration rules of New (everything but the lease
// TTL) and returns the first violation as a Fatal *coordination.Error
// naming the field. It does no I/O and never mutates c.
func (c Config) Validate() error {
	if c.Conn != nil && (len(c.Servers) > 0 || c.Credentials.kinds() > 0 || c.TLS != nil || len(c.Options) > 0) {
		return coordination.Errorf(coordination.Fatal, "natsstore: Conn is set, so Servers, Credentials, TLS and Options must be empty (they configure a connection the store dials); set Conn or those, not both")
	}
	if c.Conn == nil && len(c.Servers) == 0 {
		return coordination.Errorf(coordination.Fatal, "natsstore: Servers: at least one server URL is required (or an established connection in Conn)")
	}
	for i, o := range c.Options {
		if o == nil {
			return coordination.Errorf(coordination.Fatal, "natsstore: Options[%d] is nil; remove it", i)
		}
	}
	for i, s := range c.Servers {
		if err := serverProblem(s); err != "" {
			return coordination.Errorf(coordination.Fatal, "natsstore: Servers[%d]: %s, got %q", i, err, RedactURL(s))
		}
	}
	if !validJob(c.Job) {
		return coordination.Errorf(coordination.Fatal, "natsstore: Job must be 1..64 characters of [A-Za-z0-9_-], got %q", c.Job)
	}
	if c.History < 0 || c.History > maxHistory {
		return coordination.Errorf(coordination.Fatal, "natsstore: History must be 0..%d (revisions kept per key; 0 means 1), got %d", maxHistory, c.History)
	}
	switch c.Replicas {
	case 0, 1, 3, 5:
	default:
		return coordination.Errorf(coordination.Fatal, "natsstore: Replicas must be 1, 3 or 5, got %d", c.Replicas)
	}
	if kinds := c.Credentials.kinds(); kinds > 1 || (c.Credentials.Username == "") != (c.Credentials.Password == "") {
		return coordination.Errorf(coordination.Fatal, "natsstore: Credentials: set exactly one of Username+Password, Token or CredsFile")
	}
	if c.TLS != nil && (c.TLS.ClientCert == "") != (c.TLS.ClientKey == "") {
		return coordination.Errorf(coordination.Fatal, "natsstore: TLS: ClientCert and ClientKey must be set together")
	}
	return nil
}

// serverURLs splits a Servers entry as nats.go does: at every ",", each
// piece trimmed of spaces, empty pieces dropped.
func serverURLs(entry string) []string {
	var urls []string
	for u := range strings.SplitSeq(entry, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}

// serverProblem returns what is wrong with a Servers entry, or "". The client
// splits an entry at commas (serverURLs), so each piece must be a URL: a
// comma inside a password would otherwise cut it in two, and the client's
// parse error would quote the first half. The text returned never quotes
// the entry; the caller prints it through RedactURL.
func serverProblem(entry string) string {
	urls := serverURLs(entry)
	if len(urls) == 0 {
		return "no server URL in it; remove the entry"
	}
	for n, s := range urls {
		problem := urlProblem(s)
		switch {
		case problem == "":
			continue
		case len(urls) == 1:
			return problem
		}
		// The piece is named by its place, not its text: it may be half of
		// a password.
		msg := fmt.Sprintf("the client splits it at commas into %d URLs, and in URL %d %s", len(urls), n+1, problem)
		if strings.Contains(entry, "@") {
			msg += " (write a comma inside a password or token as %2C)"
		}
		return msg
	}
	return ""
}

// urlProblem returns what is wrong with one server URL, or "".
func urlProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "the URL does not parse"
	case u.Scheme != "nats" && u.Scheme != "tls":
		return "scheme must be nats:// or tls://"
	case u.Hostname() == "":
		return "a host is required"
	}
	if p := u.Port(); p != "" {
		if port, err := strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return "the port must be 1..65535"
		}
	}
	return ""
}

// InboxPrefix returns the inbox prefix of the connections a store of job
// dials, "_INBOX_coordination_<job>": replies and watch deliveries of the
// job come in under it, so a user's subscribe permission can be limited to
// "_INBOX_coordination_<job>.>" and a worker of one job cannot receive
// another's (see docs/nats.md, "Permissions on NATS"). A connection passed
// as Config.Conn keeps its own prefix: give it nats.CustomInboxPrefix with
// this value to fit those permissions.
func InboxPrefix(job string) string { return "_INBOX_coordination_" + job }

// validJob reports whether job is 1..64 bytes of [A-Za-z0-9_-].
func validJob(job string) bool {
	if len(job) == 0 || len(job) > maxJobLen {
		return false
	}
	for i := 0; i < len(job); i++ {
		c := job[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// kinds counts the credential kinds that are set (a username or a password
// counts as the user+password kind).
func (c Credentials) kinds() int {
	n := 0
	if c.Username != "" || c.Password != "" {
		n++
	}
	if c.Token != "" {
		n++
	}
	if c.CredsFile != "" {
		n++
	}
	return n
}

// describe names the credentials for error messages, without secrets:
// `user "svc"`, `token`, `creds file "<path>"` or `no credentials`.
func (c Credentials) describe() string {
	switch {
	case c.Username != "":
		return fmt.Sprintf("user %q", c.Username)
	case c.Token != "":
		return "token"
	case c.CredsFile != "":
		return fmt.Sprintf("creds file %q", c.CredsFile)
	}
	return "no credentials"
}

// credentialsText names the credentials for error messages, without
// secrets: [Credentials.describe], or "the userinfo in the server URL" when
// Credentials is empty and a server URL carries userinfo.
func (c Config) credentialsText() string {
	if c.Credentials.kinds() == 0 {
		for _, s := range c.Servers {
			if RedactURL(s) != s {
				return "the userinfo in the server URL"
			}
		}
	}
	return c.Credentials.describe()
}

// String renders the credentials with the password and token redacted.
func (c Credentials) String() string {
	return fmt.Sprintf("{Username:%q Password:%q Token:%q CredsFile:%q}", c.Username, secret(c.Password), secret(c.Token), c.CredsFile)
}

// GoString renders the credentials as Go syntax with the password and token
// redacted.
func (c Credentials) GoString() string {
	return fmt.Sprintf("natsstore.Credentials{Username:%q, Password:%q, Token:%q, CredsFile:%q}", c.Username, secret(c.Password), secret(c.Token), c.CredsFile)
}

// LogValue renders the credentials as a slog group with the password and
// token redacted.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("username", c.Username),
		slog.String("password", secret(c.Password)),
		slog.String("token", secret(c.Token)),
		slog.String("creds_file", c.CredsFile),
	)
}

// String renders the configuration with the password and token (and any
// userinfo embedded in a server URL) redacted; usernames and paths are
// shown.
func (c Config) String() string {
	tlsText := "<nil>"
	if c.TLS != nil {
		tlsText = fmt.Sprintf("{RootCA:%q ClientCert:%q ClientKey:%q}", c.TLS.RootCA, c.TLS.ClientCert, c.TLS.ClientKey)
	}
	return fmt.Sprintf("natsstore.Config{Servers:[%s] Job:%q Credentials:%s TLS:%s Replicas:%d Options:%d Conn:%s}",
		strings.Join(c.redactedServers(), " "), c.Job, c.Credentials.String(), tlsText, c.Replicas, len(c.Options), c.connText())
}

// connText renders Conn without its connection details: "<nil>" or
// "<set>".
func (c Config) connText() string {
	if c.Conn == nil {
		return "<nil>"
	}
	return "<set>"
}

// GoString renders the configuration as Go syntax with the password and
// token redacted.
func (c Config) GoString() string {
	servers := make([]string, len(c.Servers))
	for i, s := range c.redactedServers() {
		servers[i] = fmt.Sprintf("%q", s)
	}
	tlsText := "nil"
	if c.TLS != nil {
		tlsText = fmt.Sprintf("&natsstore.TLS{RootCA:%q, ClientCert:%q, ClientKey:%q}", c.TLS.RootCA, c.TLS.ClientCert, c.TLS.ClientKey)
	}
	connText := "nil"
	if c.Conn != nil {
		connText = "&nats.Conn{}"
	}
	return fmt.Sprintf("natsstore.Config{Servers:[]string{%s}, Job:%q, Credentials:%s, TLS:%s, Replicas:%d, Options:[]nats.Option{/* %d */}, Conn:%s}",
		strings.Join(servers, ", "), c.Job, c.Credentials.GoString(), tlsText, c.Replicas, len(c.Options), connText)
}

// LogValue renders the configuration as a slog group with the password and
// token redacted.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Any("servers", c.redactedServers()),
		slog.String("job", c.Job),
		slog.Any("credentials", c.Credentials),
	}
	if c.TLS != nil {
		attrs = append(attrs, slog.Group("tls",
			slog.String("root_ca", c.TLS.RootCA),
			slog.String("client_cert", c.TLS.ClientCert),
			slog.String("client_key", c.TLS.ClientKey)))
	}
	attrs = append(attrs, slog.Int("replicas", c.Replicas), slog.Int("options", len(c.Options)), slog.String("conn", c.connText()))
	return slog.GroupValue(attrs...)
}

// history returns the effective history depth of the state bucket (0
// means 1).
func (c Config) history() int {
	return max(c.History, 1)
}

// replicas returns the effective replica count (0 means 1).
func (c Config) replicas() int {
	if c.Replicas == 0 {
		return 1
	}
	return c.Replicas
}
