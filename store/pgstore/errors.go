package pgstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spate-go/coordination"
)

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
	if what == "" {
		return coordination.Errorf(coordination.Retryable, "pgstore: %w", err)
	}
	return coordination.Errorf(coordination.Retryable, "pgstore: %s: %w", what, err)
}

// fail classifies err, the failure of what, as a *coordination.Error that
// keeps it as the cause (and ctx's error too when ctx is done):
//
//   - Retryable: a done context, a timeout, a lost or refused connection,
//     a server shutting down or starting up, a cancelled statement
//     (statement_timeout), serialization failures and deadlocks, a
//     read-only server (a standby during a failover), lack of resources.
//     The reason says whether a write may have landed (connFailure).
//   - Fatal: authentication, missing privileges, a missing database or
//     schema, TLS verification, and every other server error; and every
//     error that is neither the server's nor the connection's: the
//     driver's refusal of the store's own statement (a Scan of the wrong
//     number or type of columns, an argument it cannot encode), which a
//     retry would only repeat, so it surfaces once (a bug, or a job's
//     schema changed outside the library).
//
// Passwords never appear in the reason.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if s.isClosed() {
		return errClosed()
	}
	reason := redactedReason(err, s.cfg)
	note, isConn := connFailure(err)
	if ctx.Err() != nil {
		if !nothingSent(err) {
			note = "" // the caller gave up waiting: a write may have landed, as for every Retryable
		}
		return &coordination.Error{Kind: coordination.Retryable, Reason: fmt.Sprintf("pgstore: %s: %v (%s)%s", what, ctx.Err(), reason, note), Err: errors.Join(ctx.Err(), err)}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		kind, hint := classifyCode(pgErr.Code)
		if kind == coordination.Retryable && nothingSent(err) {
			hint = note // a server starting up or shutting down refused the connection
		}
		return &coordination.Error{Kind: kind, Reason: fmt.Sprintf("pgstore: %s in job %q: %s%s", what, s.cfg.Job, reason, hint), Err: err}
	}
	if isVerifyErr(err) {
		return &coordination.Error{Kind: coordination.Fatal, Reason: fmt.Sprintf("pgstore: %s: TLS certificate verification failed: %s; check sslrootcert and sslmode in the DSN and the server's certificate", what, reason), Err: err}
	}
	if isConn {
		if errors.As(err, new(*pgconn.ConnectError)) {
			note += fmt.Sprintf("; check that the server runs and that the DSN's host and port are right (a connection attempt waits up to the connect timeout, %s)", s.pool.Config().ConnConfig.ConnectTimeout)
		}
		return &coordination.Error{Kind: coordination.Retryable, Reason: fmt.Sprintf("pgstore: %s: %s%s", what, reason, note), Err: err}
	}
	return &coordination.Error{Kind: coordination.Fatal, Reason: fmt.Sprintf("pgstore: %s in job %q: %s; the driver refused the store's own statement or its result%s", what, s.cfg.Job, reason, notRetried), Err: err}
}

// notRetried ends the reason of a Fatal error of the store's own statement
// (refused by the server or the driver, not a failure of either).
const notRetried = ", so a retry would fail the same way and it is not retried: " +
	"the job's schema was changed outside the library, or this is a bug in pgstore (report it with this message)"

// connFailure reports whether err is a failure of the connection, and says
// what it means for a write: a connection never made (*pgconn.ConnectError)
// or a statement never sent (pgconn.SafeToRetry) wrote nothing; a
// connection lost during a statement may have left its write landed, its
// reply lost.
func connFailure(err error) (string, bool) {
	switch {
	case errors.As(err, new(*pgconn.ConnectError)):
		return "; no connection could be made, so nothing was written", true
	case pgconn.SafeToRetry(err):
		return "; the statement was not sent, so nothing was written", true
	case isConnErr(err):
		return "; the connection failed or timed out during the statement, so a write may have landed (its reply was lost)", true
	}
	return "", false
}

// nothingSent reports whether err happened before the statement reached
// the server: no connection, or a statement never sent.
func nothingSent(err error) bool {
	return errors.As(err, new(*pgconn.ConnectError)) || pgconn.SafeToRetry(err)
}

// classifyCode returns the kind of a server error by its SQLSTATE, and a
// hint for the Fatal ones that an operator can fix.
func classifyCode(code string) (coordination.ErrorKind, string) {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "53"),                     // insufficient resources
		code == "57P01", code == "57P02", code == "57P03", // shutdown, crash, starting up
		code == "57014",                  // query_canceled: statement_timeout
		code == "40001", code == "40P01", // serialization failure, deadlock
		code == "55P03", // lock_not_available
		code == "25006": // read_only_sql_transaction: a standby
		return coordination.Retryable, ""
	case strings.HasPrefix(code, "28"):
		return coordination.Fatal, "; check the user and password (Config.Password, the DSN, PGPASSWORD or ~/.pgpass) and pg_hba.conf"
	case code == "42501":
		return coordination.Fatal, "; the role lacks a privilege named above, on the database (CONNECT, or CREATE to create the job's schema) or on the job's schema (see docs/postgres.md, \"Running on PostgreSQL\", and docs/postgres-security.md for the GRANTs)"
	case code == "3D000":
		return coordination.Fatal, "; the database does not exist: check the DSN"
	case code == "3F000", code == "42P01", code == "42883":
		return coordination.Fatal, "; the job's schema is missing or incomplete (removed by coordctl delete-job?)"
	case strings.HasPrefix(code, "42"), strings.HasPrefix(code, "22"): // syntax or access rule, data exception
		return coordination.Fatal, "; the server refused the store's own statement" + notRetried
	}
	return coordination.Fatal, ""
}

// isUndefined reports whether err says a schema, table or function does
// not exist.
func isUndefined(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "3F000" || pgErr.Code == "42P01" || pgErr.Code == "42883")
}

// isPrivilegeErr reports whether err is insufficient_privilege.
func isPrivilegeErr(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// isConnErr reports whether err is a network or connection failure (or a
// timeout or cancellation of the driver's own).
func isConnErr(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
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
