package sqlscan

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A lost connection, a shutdown or a timeout is transient (retried without
// counting towards poison); an error of the batch's own is not.
func TestTransient(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true},              // admin shutdown (pg_terminate_backend)
		{&pgconn.PgError{Code: "08006"}, true},              // connection failure
		{&pgconn.PgError{Code: "40001"}, true},              // serialization failure
		{fmt.Errorf("copy: %w", io.ErrUnexpectedEOF), true}, // the server went away mid-statement
		{fmt.Errorf("query: %w", driver.ErrBadConn), true},  // database/sql's dead connection
		{context.DeadlineExceeded, true},                    // the commit's time ran out
		{&pgconn.PgError{Code: "23505"}, false},             // unique violation
		{&pgconn.PgError{Code: "22P02"}, false},             // invalid input
		{errors.New("the sink refused the batch"), false},   // the handler's own
	} {
		if got := transient(tt.err); got != tt.want {
			t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
