package natsstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/spate-go/coordination"
)

// Connection timing. A connection attempt is bounded by the deadline of the
// operation that started it; without one, by defaultConnectTimeout. Each
// network step (dial, TLS, handshake), of the first connection and of every
// reconnect, is bounded by that too, and by a third of the lease (see
// connTiming.stepLimit), between minStepTimeout and maxStepTimeout.
const (
	defaultConnectTimeout = 10 * time.Second
	maxStepTimeout        = 10 * time.Second
	minStepTimeout        = 50 * time.Millisecond
)

// conn is one established connection with its provisioned buckets.
type conn struct {
	nc    *nats.Conn
	owned bool  // dialed by the store (false: Config.Conn), so closed by it
	link  *link // follows nc's status; set by follow
	js    jetstream.JetStream
	state kvBucket // Durable
	lease kvBucket // Ephemeral
}

// attempt is one shared connection attempt. done is closed once c and err
// are set; they are read only after done is closed.
type attempt struct {
	done chan struct{}
	c    *conn
	err  error
}

// dialer dials TCP within the store's lifetime and remembers the last
// address it dialed, so a TLS failure can name the server.
type dialer struct {
	ctx     context.Context
	timeout time.Duration

	mu   sync.Mutex
	last string
}

// Dial implements nats.CustomDialer.
func (d *dialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.last = address
	d.mu.Unlock()
	nd := net.Dialer{Timeout: d.timeout}
	return nd.DialContext(d.ctx, network, address)
}

// lastAddress returns the address dialed last.
func (d *dialer) lastAddress() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// client returns the store's connection, connecting and provisioning the
// buckets on first use. Concurrent callers share one attempt; a failed
// attempt is not remembered. The caller waits at most until ctx is done.
func (s *Store) client(ctx context.Context) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.ctxErr("connecting to NATS", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed()
	}
	if c := s.conn; c != nil && c.nc.IsClosed() {
		if !c.owned {
			s.mu.Unlock()
			return nil, s.closedConnErr(c)
		}
		// Closed by the client (for example after repeated auth
		// failures): connect afresh.
		s.conn = nil
		c.unfollow()
	}
	if c := s.conn; c != nil {
		s.mu.Unlock()
		return c, nil
	}
	a := s.attempt
	if a == nil {
		a = &attempt{done: make(chan struct{})}
		s.attempt = a
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(defaultConnectTimeout)
		}
		s.wg.Go(func() { s.runAttempt(a, deadline) })
	}
	s.mu.Unlock()
	select {
	case <-a.done:
		return a.c, a.err
	case <-ctx.Done():
		return nil, s.ctxErr("connecting to NATS", ctx.Err())
	}
}

// runAttempt connects, records the outcome in a and, on success, installs
// the connection for later operations.
func (s *Store) runAttempt(a *attempt, deadline time.Time) {
	ctx, cancel := context.WithDeadline(s.life, deadline)
	defer cancel()
	c, err := s.connect(ctx)
	s.mu.Lock()
	s.attempt = nil
	if err == nil && s.closed {
		c.release()
		c, err = nil, errClosed()
	}
	if err == nil {
		s.conn = c
	}
	a.c, a.err = c, err
	s.mu.Unlock()
	close(a.done)
}

// connect dials the servers (or adopts Config.Conn), checks the server
// (connectServer) and provisions both buckets.
func (s *Store) connect(ctx context.Context) (*conn, error) {
	c, err := s.connectServer(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.openBuckets(ctx, c); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// connectServer dials the servers (or adopts Config.Conn), follows the
// connection's status and checks the server version and JetStream; it
// opens no bucket. The caller releases the connection.
func (s *Store) connectServer(ctx context.Context) (*conn, error) {
	c := &conn{nc: s.cfg.Conn}
	if c.nc == nil {
		nc, err := s.dial(ctx)
		if err != nil {
			return nil, err
		}
		c.nc, c.owned = nc, true
	} else {
		s.checkPassedConn(c.nc)
	}
	s.follow(c)
	err := s.awaitUp(ctx, c)
	if err == nil {
		err = s.checkJetStream(ctx, c)
	}
	if err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// dial connects to the configured servers with the store's client options
// (reconnect timing derived from the lease), then Config.Options.
func (s *Store) dial(ctx context.Context) (*nats.Conn, error) {
	step := min(time.Until(mustDeadline(ctx)), s.timing.stepLimit)
	step = min(max(step, minStepTimeout), maxStepTimeout)
	d := &dialer{ctx: s.life, timeout: step}
	opts, err := s.authOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		nats.Name("coordination-natsstore-"+s.cfg.Job),
		nats.CustomInboxPrefix(InboxPrefix(s.cfg.Job)),
		nats.SetCustomDialer(d),
		nats.Timeout(step),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(s.timing.reconnectWait),
		nats.ReconnectJitter(s.timing.reconnectJitter, s.timing.reconnectJitter),
		nats.PingInterval(s.timing.pingInterval),
		// No client-side buffer while reconnecting: the store holds an
		// operation until the connection is back (see awaitUp), so that
		// nothing is replayed after its caller has given up on it.
		nats.ReconnectBufSize(-1),
		nats.NoCallbacksAfterClientClose(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				// The request it refused gets no answer and times out:
				// this line is where the cause shows.
				s.log.Error("NATS refused a request of the store: the user lacks a permission the job needs (see docs/nats.md, \"Permissions on NATS\")", "err", err)
				return
			}
			s.log.Warn("nats asynchronous error", "err", err)
		}),
	)
	opts = append(opts, s.cfg.Options...)
	nc, err := nats.Connect(strings.Join(s.cfg.Servers, ","), opts...)
	if err != nil {
		return nil, s.classifyConnectErr(ctx, err, d.lastAddress())
	}
	return nc, nil
}

// checkPassedConn warns when a connection passed in reconnects too slowly
// for the lease: its own settings apply, and a reconnect slower than a
// third of the lease lets a short outage cost leases.
func (s *Store) checkPassedConn(nc *nats.Conn) {
	o := nc.Opts
	limit := s.leaseTTL / 3
	jitter := o.ReconnectJitter
	if o.Secure || o.TLSConfig != nil {
		jitter = o.ReconnectJitterTLS // as the client picks it
	}
	if worst := o.ReconnectWait + jitter; !o.AllowReconnect || worst >= limit {
		s.log.Warn("the NATS connection in Config.Conn reconnects too slowly for the lease; set nats.ReconnectWait plus jitter well under a third of the lease",
			"reconnect", o.AllowReconnect, "reconnect_wait", o.ReconnectWait, "limit", limit)
	}
}

// mustDeadline returns ctx's deadline; contexts built by runAttempt always
// have one.
func mustDeadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(defaultConnectTimeout)
	}
	return d
}

// checkJetStream checks the version and JetStream on a fresh connection
// and sets c.js.
func (s *Store) checkJetStream(ctx context.Context, c *conn) error {
	if err := checkVersion(c.nc.ConnectedServerVersion()); err != nil {
		return err
	}
	if mp := c.nc.MaxPayload(); mp > 0 && mp < bucketMaxMsgSize {
		return coordination.Errorf(coordination.Fatal, "natsstore: server %s allows payloads of %d bytes, below the %d this store needs (512 KiB values plus headers); raise max_payload", RedactURL(c.nc.ConnectedUrl()), mp, bucketMaxMsgSize)
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return coordination.Errorf(coordination.Retryable, "natsstore: opening JetStream: %w", err)
	}
	c.js = js
	if _, err := js.AccountInfo(ctx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return coordination.Errorf(coordination.Fatal, "natsstore: JetStream is not enabled for this account on %s: %w; enable JetStream on the server and the account", RedactURL(c.nc.ConnectedUrl()), err)
		}
		return s.openErr(ctx, "reading JetStream account info", err)
	}
	return nil
}

// openBuckets opens or creates both buckets. With Config.ExistingOnly a
// missing bucket is not created: the connection fails when both are
// missing (no such job), and only the operations on the missing one fail
// when the other exists (a half-deleted job, which DeleteJob can finish).
func (s *Store) openBuckets(ctx context.Context, c *conn) error {
	var err error
	if c.state, err = s.provision(ctx, c.js, s.bucketConfig(false)); err != nil {
		return err
	}
	if c.lease, err = s.provision(ctx, c.js, s.bucketConfig(true)); err != nil {
		return err
	}
	if c.state.missing != nil && c.lease.missing != nil {
		return coordination.Errorf(coordination.Fatal, "natsstore: job %q does not exist on this server: neither bucket %s nor %s exists, so no worker has started it here (check Job and the server URLs): %w", s.cfg.Job, s.bucketName(false), s.bucketName(true), jetstream.ErrBucketNotFound)
	}
	return nil
}

// authOptions reads and checks the credential and TLS files and returns the
// matching client options. An unreadable or malformed file is Fatal naming
// its path.
func (s *Store) authOptions() ([]nats.Option, error) {
	var opts []nats.Option
	cr := s.cfg.Credentials
	switch {
	case cr.Username != "":
		opts = append(opts, nats.UserInfo(cr.Username, cr.Password))
	case cr.Token != "":
		opts = append(opts, nats.Token(cr.Token))
	case cr.CredsFile != "":
		if err := checkCredsFile(cr.CredsFile); err != nil {
			return nil, err
		}
		// The client rereads the file on every (re)connect, so a rotated
		// file is picked up without a restart.
		opts = append(opts, nats.UserCredentials(cr.CredsFile))
	}
	if t := s.cfg.TLS; t != nil {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
		if t.RootCA != "" {
			if err := checkRootCA(t.RootCA); err != nil {
				return nil, err
			}
			opts = append(opts, nats.RootCAs(t.RootCA))
		}
		if t.ClientCert != "" {
			if _, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey); err != nil {
				return nil, coordination.Errorf(coordination.Fatal, "natsstore: cannot load client certificate %q with key %q: %w; check Config.TLS", t.ClientCert, t.ClientKey, err)
			}
			opts = append(opts, nats.ClientCert(t.ClientCert, t.ClientKey))
		}
	}
	return opts, nil
}

// checkCredsFile reads a .creds file and checks that it holds a user JWT and
// a user seed.
func checkCredsFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return coordination.Errorf(coordination.Fatal, "natsstore: cannot read creds file %q: %w; check Config.Credentials.CredsFile", path, err)
	}
	tok, err := nkeys.ParseDecoratedJWT(data)
	if err == nil {
		_, err = jwt.DecodeUserClaims(tok)
	}
	if err == nil {
		var kp nkeys.KeyPair
		if kp, err = nkeys.ParseDecoratedUserNKey(data); err == nil {
			kp.Wipe()
		}
	}
	if err != nil {
		return coordination.Errorf(coordination.Fatal, "natsstore: creds file %q does not hold a user JWT and seed: %w; check Config.Credentials.CredsFile", path, err)
	}
	return nil
}

// checkRootCA reads a PEM CA bundle and checks that it holds a certificate.
func checkRootCA(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return coordination.Errorf(coordination.Fatal, "natsstore: cannot read root CA file %q: %w; check Config.TLS.RootCA", path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return coordination.Errorf(coordination.Fatal, "natsstore: root CA file %q holds no PEM certificate; check Config.TLS.RootCA", path)
	}
	return nil
}

// classifyConnectErr maps a failed nats.Connect to an error class: Fatal
// for credentials and TLS problems (no retry can succeed), Retryable for
// the rest. The client's error is wrapped with the server URLs scrubbed
// from its text.
func (s *Store) classifyConnectErr(ctx context.Context, raw error, addr string) error {
	server := addr
	if server == "" {
		server = strings.Join(s.cfg.redactedServers(), ",")
	}
	err := s.cfg.scrub(raw)
	switch {
	case isAuthErr(raw):
		return coordination.Errorf(coordination.Fatal, "natsstore: authorization failed for %s: %w; check Config.Credentials", s.cfg.credentialsText(), err)
	case isVerifyErr(raw):
		return coordination.Errorf(coordination.Fatal, "natsstore: TLS certificate verification failed for server %s: %w; check Config.TLS.RootCA and the server's certificate", server, err)
	case strings.Contains(raw.Error(), "remote error: tls: ") ||
		errors.Is(raw, nats.ErrTLS) && strings.Contains(raw.Error(), "connection closed by remote after TLS handshake"):
		// The server refused the client certificate: with TLS 1.3 the
		// client learns it from an alert or, depending on timing, from the
		// connection closing right after the handshake.
		return coordination.Errorf(coordination.Fatal, "natsstore: server %s rejected the TLS handshake: %w; check Config.TLS.ClientCert and Config.TLS.ClientKey", server, err)
	case errors.Is(raw, nats.ErrSecureConnWanted):
		return coordination.Errorf(coordination.Fatal, "natsstore: server %s does not offer TLS, but Config.TLS is set: %w", server, err)
	case errors.Is(raw, nats.ErrSecureConnRequired):
		return coordination.Errorf(coordination.Fatal, "natsstore: server %s requires TLS: %w; set Config.TLS or use tls:// URLs", server, err)
	}
	if ctx.Err() != nil && s.isClosed() {
		return errClosed()
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: connecting to %s: %w", strings.Join(s.cfg.redactedServers(), ","), err)
}

// isAuthErr reports whether err is an authentication or authorization
// failure reported by the server.
func isAuthErr(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired) ||
		strings.Contains(strings.ToLower(err.Error()), "authorization violation")
}

// isVerifyErr reports whether err is a failed verification of the server's
// certificate.
func isVerifyErr(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		ierr x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &ierr)
}

// openErr classifies a failure while opening or creating a bucket:
// authorization problems are Fatal, everything else Retryable.
func (s *Store) openErr(ctx context.Context, what string, err error) error {
	if errors.Is(err, nats.ErrPermissionViolation) || isAuthErr(err) {
		return coordination.Errorf(coordination.Fatal, "natsstore: %s: not authorized for %s: %w; check Config.Credentials and the account's permissions", what, s.cfg.credentialsText(), err)
	}
	if ctx.Err() != nil {
		return s.ctxErr(what, err)
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: %s: %w", what, err)
}

// connectionLost breaks the watches running on c: after a disconnect their
// consumers may have missed events, so their owners re-watch.
func (s *Store) connectionLost(c *conn) {
	s.mu.Lock()
	ws := make([]*watcher, 0, len(s.watches))
	for w := range s.watches {
		if w.conn == c {
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.breakWith(errConnLost())
	}
}

// errConnLost is the error of a watch broken by a lost connection.
func errConnLost() error {
	return coordination.Errorf(coordination.Retryable, "natsstore: connection to NATS lost; re-watch")
}

// errClosed is the error of every operation after Close.
func errClosed() error {
	return coordination.Errorf(coordination.Fatal, "store is closed")
}

// ctxErr reports a done context as Retryable (or Fatal "store is closed"
// after Close), keeping the cause.
func (s *Store) ctxErr(what string, err error) error {
	if s.isClosed() {
		return errClosed()
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: %s: %w", what, err)
}
