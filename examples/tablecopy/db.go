package main

import (
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/url"
	"sync"

	"modernc.org/sqlite"
)

// hashFunc is the SQL function the verification sums: a 32-bit FNV-1a hash of
// one row's values, so sum(hashFunc(cols...)) over a table is an
// order-independent checksum that fits an int64 for up to 2^31 rows.
const hashFunc = "tablecopy_row_hash"

// registerHash registers hashFunc with the sqlite driver once per process
// (the driver's function registry is process-wide and refuses a second
// registration of one name).
var registerHash = sync.OnceValue(func() error {
	return sqlite.RegisterDeterministicScalarFunction(hashFunc, -1, rowHash)
})

// rowHash hashes the values of one row with a type tag per value, so that the
// integer 1, the text "1" and the blob "1" hash differently, and a length
// prefix per text or blob, so ("ab", "c") and ("a", "bc") do too. SQLite hands a
// function only these five storage classes.
func rowHash(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	h := fnv.New32a()
	for _, a := range args {
		switch v := a.(type) {
		case nil:
			h.Write([]byte{'n'})
		case int64:
			h.Write(binary.BigEndian.AppendUint64([]byte{'i'}, uint64(v)))
		case float64:
			h.Write(binary.BigEndian.AppendUint64([]byte{'f'}, math.Float64bits(v)))
		case string:
			h.Write(append(binary.BigEndian.AppendUint64([]byte{'t'}, uint64(len(v))), v...))
		case []byte:
			h.Write(append(binary.BigEndian.AppendUint64([]byte{'b'}, uint64(len(v))), v...))
		default:
			return nil, fmt.Errorf("%s: unsupported value type %T", hashFunc, a)
		}
	}
	return int64(h.Sum32()), nil
}

// openDB opens the SQLite database file at path for this program: WAL
// journal (readers never block the writer), a busy timeout so that writers
// of several workers or processes queue instead of failing, and write
// transactions that take the write lock at BEGIN (no deadlock on a lock
// upgrade). maxConns bounds the pool (1 serialises this handle's writers in
// Go rather than in SQLite's busy handler).
func openDB(path string, maxConns int) (*sql.DB, error) {
	if err := registerHash(); err != nil {
		return nil, fmt.Errorf("registering %s: %w", hashFunc, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := db.Ping(); err != nil {
		return nil, errors.Join(fmt.Errorf("opening %s: %w", path, err), db.Close())
	}
	return db, nil
}

// quote quotes an SQL identifier.
func quote(name string) string {
	out := []byte{'"'}
	for i := range len(name) {
		if name[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, name[i])
	}
	return string(append(out, '"'))
}

// rollback rolls tx back, ignoring a transaction that already ended (a
// failed Commit ends it).
func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}
