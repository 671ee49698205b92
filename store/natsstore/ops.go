package natsstore

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Create writes key iff it is absent (never written, deleted or expired):
// KV create, which also succeeds over a delete or expiry marker. A live key
// returns (0, false, nil). A value above 512 KiB is Fatal and nothing is
// sent; server and connection failures are Retryable.
func (s *Store) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if err := s.checkValue(key, value); err != nil {
		return 0, false, err
	}
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return 0, false, err
	}
	rev, err := kv.Create(ctx, key, value)
	if err != nil {
		// Create reports "key exists" as ErrKeyExists; when it races a
		// delete marker it may report the bare wrong-last-sequence error
		// (10071, or 10164 on replicated buckets).
		if errors.Is(err, jetstream.ErrKeyExists) || isRevisionMismatch(err) {
			return 0, false, nil
		}
		return 0, false, s.opErr("create", ks, key, err)
	}
	s.puts.note(ks, key, store.Revision(rev))
	return store.Revision(rev), true, nil
}

// Update writes key iff it is live at revision expected: KV update with the
// expected revision. A revision mismatch returns (0, false, nil); expected 0
// always loses without a write (0 is never a real revision), and so does
// the revision of a delete or expiry marker: unless expected is the latest
// put revision this store has seen for key, it reads the key first. On
// Ephemeral the write re-arms the key's TTL.
func (s *Store) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
	if err := s.checkValue(key, value); err != nil {
		return 0, false, err
	}
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return 0, false, err
	}
	if expected == 0 {
		// KV update at revision 0 would mean "create if absent".
		return 0, false, nil
	}
	if !s.puts.known(ks, key, expected) {
		// expected may be the revision of a delete or expiry marker, which
		// KV update would accept: read first (see knownPuts).
		e, live, err := s.get(ctx, kv, ks, key)
		if err != nil {
			return 0, false, err
		}
		if !live || e.Revision != expected {
			return 0, false, nil
		}
	}
	rev, err := kv.Update(ctx, key, value, uint64(expected))
	if err != nil {
		if isRevisionMismatch(err) {
			return 0, false, nil
		}
		return 0, false, s.opErr("update", ks, key, err)
	}
	s.puts.note(ks, key, store.Revision(rev))
	return store.Revision(rev), true, nil
}

// Get returns the live entry of key; a missing key and a delete, purge or
// expiry marker return ok=false.
func (s *Store) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return store.Entry{}, false, err
	}
	return s.get(ctx, kv, ks, key)
}

// get reads key from kv.
func (s *Store) get(ctx context.Context, kv jetstream.KeyValue, ks store.Keyspace, key string) (store.Entry, bool, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return store.Entry{}, false, nil
		}
		return store.Entry{}, false, s.opErr("get", ks, key, err)
	}
	if e.Operation() != jetstream.KeyValuePut {
		return store.Entry{}, false, nil
	}
	s.puts.note(ks, key, store.Revision(e.Revision()))
	return entry(e), true, nil
}

// Delete writes a delete marker for key, guarded by expected unless it is
// 0. An absent key always wins: when a guarded delete meets a revision
// mismatch the store reads the key and reports true if it is absent, false
// if it is live at another revision. Purge is never used.
func (s *Store) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return false, err
	}
	var opts []jetstream.KVDeleteOpt
	if expected != 0 {
		opts = append(opts, jetstream.LastRevision(uint64(expected)))
	}
	err = kv.Delete(ctx, key, opts...)
	if err == nil {
		s.puts.forget(ks, key)
		return true, nil
	}
	if expected == 0 || !isRevisionMismatch(err) {
		return false, s.opErr("delete", ks, key, err)
	}
	_, live, err := s.get(ctx, kv, ks, key)
	if err != nil {
		return false, err
	}
	return !live, nil
}

// bucket returns the bucket of ks, connecting first if needed.
func (s *Store) bucket(ctx context.Context, ks store.Keyspace) (jetstream.KeyValue, error) {
	kv, _, err := s.bucketConn(ctx, ks)
	return kv, err
}

// bucketConn returns the bucket of ks and the connection it belongs to,
// connecting first if needed.
func (s *Store) bucketConn(ctx context.Context, ks store.Keyspace) (jetstream.KeyValue, *conn, error) {
	if ks != store.Durable && ks != store.Ephemeral {
		return nil, nil, coordination.Errorf(coordination.Fatal, "natsstore: unknown keyspace %d", int(ks))
	}
	c, err := s.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	if ks == store.Ephemeral {
		return c.lease, c, nil
	}
	return c.state, c, nil
}

// checkValue rejects a value above the cap before anything is sent, and
// operations on a closed store.
func (s *Store) checkValue(key string, value []byte) error {
	if s.isClosed() {
		return errClosed()
	}
	if len(value) > maxValueSize {
		return coordination.Errorf(coordination.Fatal, "value for %s is %d bytes, above this store's cap of %d bytes", key, len(value), maxValueSize)
	}
	return nil
}

// isRevisionMismatch reports whether err is a lost compare-and-swap: the
// client's ErrKeyRevisionMismatch, or the API error codes 10071 ("wrong
// last sequence") and 10164 (its form on replicated buckets) directly.
func isRevisionMismatch(err error) bool {
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

// opErr classifies a failed operation: an invalid key is Fatal (no retry
// can succeed), a closed store is Fatal "store is closed", everything else
// Retryable with the key in the reason and the cause kept in Err.
func (s *Store) opErr(op string, ks store.Keyspace, key string, err error) error {
	if s.isClosed() {
		return errClosed()
	}
	if errors.Is(err, jetstream.ErrInvalidKey) {
		return coordination.Errorf(coordination.Fatal, "natsstore: %s %q in %s: %w (keys may hold only [-/_=.A-Za-z0-9], with no empty dot-separated token)", op, key, ks, err)
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: %s %q in %s: %w", op, key, ks, err)
}

// entry converts a KV entry; an empty value is returned as a non-nil empty
// slice.
func entry(e jetstream.KeyValueEntry) store.Entry {
	v := e.Value()
	if v == nil {
		v = []byte{}
	}
	return store.Entry{Key: e.Key(), Value: v, Revision: store.Revision(e.Revision())}
}
