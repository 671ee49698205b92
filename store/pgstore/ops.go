package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// queries are the statements of one job's store, expanded once.
type queries struct {
	create, update, delete, get, list, snapshot, poll, sweep, prune string
}

// liveEntry is the condition of a row that has not expired.
const liveEntry = "(e.expires_at IS NULL OR e.expires_at > clock_timestamp())"

// cappedValue is a row's value, or NULL when it is above the value cap: a
// row written outside the library is not sent whole (its size, read from
// octet_length without detoasting it, reports it; checkRead).
var cappedValue = fmt.Sprintf("CASE WHEN octet_length(e.value) <= %d THEN e.value END", maxValueSize)

// underPrefix selects keys under the prefix $2; $3 is an upper bound that
// lets the primary key's index serve the range (starts_with decides).
const underPrefix = "e.key >= $2 AND ($3::text IS NULL OR e.key < $3) AND starts_with(e.key, $2)"

func newQueries(sc schema) queries {
	return queries{
		create: sc.sql("SELECT {s}.create_entry($1, $2, $3, $4)"),
		update: sc.sql("SELECT {s}.update_entry($1, $2, $3, $4, $5)"),
		delete: sc.sql("SELECT {s}.delete_entry($1, $2, $3)"),
		get:    sc.sql("SELECT " + cappedValue + ", octet_length(e.value), e.revision FROM {s}.entries e WHERE e.keyspace = $1 AND e.key = $2 AND " + liveEntry),
		list:   sc.sql("SELECT e.key, " + cappedValue + ", octet_length(e.value), e.revision FROM {s}.entries e WHERE e.keyspace = $1 AND " + underPrefix + " AND " + liveEntry),
		// The snapshot of a watch: a header row (the change log's high-water
		// mark and pruning point) and the live keys, in one statement, so
		// one MVCC snapshot.
		snapshot: sc.sql(`SELECT 0, greatest((SELECT coalesce(max(c.revision), 0) FROM {s}.changes c), m.pruned_upto), m.pruned_upto, NULL::text, NULL::bytea, NULL::integer FROM {s}.meta m
UNION ALL
SELECT 1, e.revision, 0, e.key, ` + cappedValue + `, octet_length(e.value) FROM {s}.entries e WHERE e.keyspace = $1 AND ` + underPrefix + " AND " + liveEntry),
		// A watch's catch-up: the header row and the next changes after
		// revision $4 of keyspace $1 under prefix $2, at most $5.
		poll: sc.sql(`SELECT 0, greatest((SELECT coalesce(max(c.revision), 0) FROM {s}.changes c), m.pruned_upto), m.pruned_upto, NULL::text, NULL::bytea, NULL::integer FROM {s}.meta m
UNION ALL
(SELECT 1, e.revision, 0, e.key, ` + cappedValue + `, octet_length(e.value) FROM {s}.changes e WHERE e.revision > $4 AND e.keyspace = $1 AND ` + underPrefix + ` ORDER BY e.revision LIMIT $5)`),
		sweep: sc.sql("SELECT {s}.sweep_expired($1)"),
		prune: sc.sql("SELECT {s}.prune_changes($1, $2)"),
	}
}

// prefixBound returns the upper bound of the keys under prefix for the
// index range of underPrefix, or nil (no bound) for the empty prefix.
func prefixBound(prefix string) any {
	if prefix == "" {
		return nil
	}
	return prefix + string(utf8.MaxRune)
}

// ttlFor returns the TTL in microseconds a write to ks arms: the lease TTL
// on Ephemeral, none on Durable.
func (s *Store) ttlFor(ks store.Keyspace) int64 {
	if ks == store.Ephemeral {
		return s.leaseTTL.Microseconds()
	}
	return 0
}

// checkKey rejects a key PostgreSQL text cannot hold: empty, not UTF-8, or
// holding a NUL byte.
func checkKey(key string) error {
	if key == "" || !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return coordination.Errorf(coordination.Fatal, "pgstore: key %q must be non-empty UTF-8 without NUL bytes", key)
	}
	return nil
}

// checkValue rejects a value above the cap.
func checkValue(key string, value []byte) error {
	if len(value) > maxValueSize {
		return coordination.Errorf(coordination.Fatal, "value for %s is %d bytes, above this store's cap of %d bytes", key, len(value), maxValueSize)
	}
	return nil
}

// checkRead rejects a row read from the job's tables that the library
// never writes: a value above the cap (size, its octet_length) or a
// revision below 1. Both were written outside the library (by hand, or a
// corrupt restore); handing them on would break the store contract
// (revisions increase, values fit the cap), so they are Fatal naming the
// key and the fix.
func (s *Store) checkRead(ks store.Keyspace, key string, size *int32, rev int64) error {
	if size != nil && *size > maxValueSize {
		return coordination.Errorf(coordination.Fatal, "pgstore: job %q: %s key %q holds a %d-byte value, above the store's cap of %d bytes: a corrupt record written outside the library; delete or rewrite it (or restore the job)", s.cfg.Job, ks, key, *size, maxValueSize)
	}
	if rev < 1 {
		return coordination.Errorf(coordination.Fatal, "pgstore: job %q: %s key %q is at revision %d, below 1: a corrupt record written outside the library (revisions come from the job's sequence and are positive); delete or rewrite it (or restore the job)", s.cfg.Job, ks, key, rev)
	}
	return nil
}

// bytesOf returns value as a non-nil slice: nil would be sent as NULL.
func bytesOf(value []byte) []byte {
	if value == nil {
		return []byte{}
	}
	return value
}

// retry runs call, once more when the first attempt failed before anything
// reached the server (a pooled connection that died idle), so that a
// server restart costs no operation that could not have landed.
func retry(call func() error) error {
	err := call()
	if err != nil && pgconn.SafeToRetry(err) {
		err = call()
	}
	return err
}

// opName names an operation on a key for errors.
func opName(op string, ks store.Keyspace, key string) string {
	return fmt.Sprintf("%s of %s key %q", op, ks, key)
}

// Create writes key iff it is absent (never written, deleted or expired).
// A live key returns (0, false, nil). A value above 512 KiB is Fatal and
// nothing is sent; connection and server failures are Retryable.
func (s *Store) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	if err := checkValue(key, value); err != nil {
		return 0, false, err
	}
	return s.write(ctx, opName("Create", ks, key), s.q.create, int16(ks), key, bytesOf(value), s.ttlFor(ks))
}

// Update writes key iff it is live at revision expected, in one statement
// that compares the revision; on Ephemeral it re-arms the key's TTL. A lost
// comparison returns (0, false, nil).
func (s *Store) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	if err := checkKey(key); err != nil {
		return 0, false, err
	}
	if err := checkValue(key, value); err != nil {
		return 0, false, err
	}
	return s.write(ctx, opName("Update", ks, key), s.q.update, int16(ks), key, bytesOf(value), int64(expected), s.ttlFor(ks))
}

// write runs a create or update function, which returns the new revision
// or 0 when the precondition lost.
func (s *Store) write(ctx context.Context, what, q string, args ...any) (store.Revision, bool, error) {
	pool, err := s.open(ctx)
	if err != nil {
		return 0, false, err
	}
	var rev int64
	if err := retry(func() error { return pool.QueryRow(ctx, q, args...).Scan(&rev) }); err != nil {
		return 0, false, s.fail(ctx, what, err)
	}
	if rev == 0 {
		return 0, false, nil
	}
	if rev < 0 {
		return 0, false, coordination.Errorf(coordination.Fatal, "pgstore: job %q: %s got revision %d from the job's sequence %s.revisions, below 1: the sequence was changed outside the library; restore it above every revision in use (SELECT setval('%s.revisions', (SELECT max(revision) FROM %s.changes)))", s.cfg.Job, what, rev, s.sc.name, s.sc.name, s.sc.name)
	}
	return store.Revision(rev), true, nil
}

// Get returns the live entry of key, or ok=false; an expired key is absent
// at once, whether or not a sweep has removed it yet.
func (s *Store) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if err := checkKey(key); err != nil {
		return store.Entry{}, false, err
	}
	pool, err := s.open(ctx)
	if err != nil {
		return store.Entry{}, false, err
	}
	var e store.Entry
	var rev int64
	var size *int32
	err = retry(func() error { return pool.QueryRow(ctx, s.q.get, int16(ks), key).Scan(&e.Value, &size, &rev) })
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Entry{}, false, nil
	}
	if err != nil {
		return store.Entry{}, false, s.fail(ctx, opName("Get", ks, key), err)
	}
	if err := s.checkRead(ks, key, size, rev); err != nil {
		return store.Entry{}, false, err
	}
	e.Key, e.Revision = key, store.Revision(rev)
	return e, true, nil
}

// Delete removes key: unconditionally with expected 0, else iff it is live
// at expected. An absent (or expired) key always wins.
func (s *Store) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	pool, err := s.open(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := retry(func() error { return pool.QueryRow(ctx, s.q.delete, int16(ks), key, int64(expected)).Scan(&ok) }); err != nil {
		return false, s.fail(ctx, opName("Delete", ks, key), err)
	}
	return ok, nil
}

// List returns every live key under prefix (plain string prefix) from one
// statement, so one consistent snapshot.
func (s *Store) List(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	pool, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Entry
	var bad error // a corrupt row (checkRead)
	err = retry(func() error {
		out, bad = out[:0], nil
		rows, err := pool.Query(ctx, s.q.list, int16(ks), prefix, prefixBound(prefix))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e store.Entry
			var rev int64
			var size *int32
			if err := rows.Scan(&e.Key, &e.Value, &size, &rev); err != nil {
				return err
			}
			if err := s.checkRead(ks, e.Key, size, rev); err != nil {
				bad = err
				return nil
			}
			e.Revision = store.Revision(rev)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.fail(ctx, fmt.Sprintf("List of %s keys under %q", ks, prefix), err)
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}
