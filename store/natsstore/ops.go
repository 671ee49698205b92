package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Create writes key iff it is absent (never written, deleted or expired):
// KV create, which also succeeds over a delete or expiry marker. A live key
// returns (0, false, nil); a create that fails while the key reads as absent
// (a racing delete wrote a new marker) is tried again, a few times at most.
// A value above 512 KiB is Fatal and nothing is sent; server and connection
// failures are Retryable.
func (s *Store) Create(ctx context.Context, ks store.Keyspace, key string, value []byte) (rev store.Revision, ok bool, err error) {
	err = s.resend(ctx, func() (err error) {
		rev, ok, err = s.create(ctx, ks, key, value)
		return err
	})
	return rev, ok, err
}

// create is one attempt of Create.
func (s *Store) create(ctx context.Context, ks store.Keyspace, key string, value []byte) (store.Revision, bool, error) {
	if err := s.checkValue(key, value); err != nil {
		return 0, false, err
	}
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return 0, false, err
	}
	for attempt := 0; ; attempt++ {
		rev, err := kv.Create(ctx, key, value)
		if err == nil {
			s.puts.note(ks, key, store.Revision(rev))
			return store.Revision(rev), true, nil
		}
		// Create reports "key exists" as ErrKeyExists; when it races a
		// delete marker it may report the bare wrong-last-sequence error
		// (10071, or 10164 on replicated buckets). The two cannot be told
		// apart, and a racing delete (even of an absent key) writes a new
		// marker, so a Create of an absent key can fail this way: read the
		// key, and create again while it is absent.
		if !errors.Is(err, jetstream.ErrKeyExists) && !isRevisionMismatch(err) {
			return 0, false, s.opErr("create", ks, key, err)
		}
		if attempt == maxInFlightRetries {
			return 0, false, nil
		}
		if isInFlight(err) {
			if err := s.backoff(ctx, "create", ks, key, attempt); err != nil {
				return 0, false, err
			}
		}
		if _, live, err := s.get(ctx, kv, ks, key); err != nil || live {
			return 0, false, err
		}
	}
}

// Update writes key iff it is live at revision expected: KV update with the
// expected revision. A revision mismatch returns (0, false, nil); expected 0
// always loses without a write (0 is never a real revision), and so does
// the revision of a delete or expiry marker: unless expected is the latest
// put revision this store has seen for key, it reads the key first. On
// Ephemeral the write re-arms the key's TTL.
func (s *Store) Update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (rev store.Revision, ok bool, err error) {
	err = s.resend(ctx, func() (err error) {
		rev, ok, err = s.update(ctx, ks, key, value, expected)
		return err
	})
	return rev, ok, err
}

// update is one attempt of Update.
func (s *Store) update(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision) (store.Revision, bool, error) {
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
	// expected may be the revision of a delete or expiry marker, which KV
	// update would accept: unless it is a known put, read first (see
	// knownPuts).
	read := !s.puts.known(ks, key, expected)
	for attempt := 0; ; attempt++ {
		if read {
			e, live, err := s.get(ctx, kv, ks, key)
			if err != nil || !live || e.Revision != expected {
				return 0, false, err
			}
		}
		rev, err := kv.Update(ctx, key, value, uint64(expected))
		if err == nil {
			s.puts.note(ks, key, store.Revision(rev))
			return store.Revision(rev), true, nil
		}
		if !isRevisionMismatch(err) {
			return 0, false, s.opErr("update", ks, key, err)
		}
		if !isInFlight(err) || attempt == maxInFlightRetries {
			return 0, false, nil
		}
		if err := s.backoff(ctx, "update", ks, key, attempt); err != nil {
			return 0, false, err
		}
		read = true
	}
}

// Get returns the live entry of key; a missing key and a delete, purge or
// expiry marker return ok=false.
func (s *Store) Get(ctx context.Context, ks store.Keyspace, key string) (e store.Entry, ok bool, err error) {
	err = s.resend(ctx, func() error {
		kv, err := s.bucket(ctx, ks)
		if err != nil {
			return err
		}
		e, ok, err = s.get(ctx, kv, ks, key)
		return err
	})
	return e, ok, err
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
// if it is live at another revision, and deletes again if it is now live at
// expected (a few times at most). Purge is never used.
func (s *Store) Delete(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (ok bool, err error) {
	err = s.resend(ctx, func() (err error) {
		ok, err = s.del(ctx, ks, key, expected)
		return err
	})
	return ok, err
}

// del is one attempt of Delete.
func (s *Store) del(ctx context.Context, ks store.Keyspace, key string, expected store.Revision) (bool, error) {
	kv, err := s.bucket(ctx, ks)
	if err != nil {
		return false, err
	}
	var opts []jetstream.KVDeleteOpt
	if expected != 0 {
		opts = append(opts, jetstream.LastRevision(uint64(expected)))
	}
	for attempt := 0; ; attempt++ {
		err := kv.Delete(ctx, key, opts...)
		if err == nil {
			s.puts.forget(ks, key)
			return true, nil
		}
		if expected == 0 || !isRevisionMismatch(err) {
			return false, s.opErr("delete", ks, key, err)
		}
		// The key may have been written between the delete and this read
		// (a guarded delete of a key not yet created meets the create): if
		// it is now live at expected, the precondition holds, so try again.
		e, live, rerr := s.get(ctx, kv, ks, key)
		switch {
		case rerr != nil:
			return false, rerr
		case !live:
			return true, nil
		case e.Revision != expected || attempt == maxInFlightRetries:
			return false, nil
		}
		if isInFlight(err) {
			if err := s.backoff(ctx, "delete", ks, key, attempt); err != nil {
				return false, err
			}
		}
	}
}

// bucket returns the key-value handle of ks, connecting first if needed.
func (s *Store) bucket(ctx context.Context, ks store.Keyspace) (jetstream.KeyValue, error) {
	b, _, err := s.bucketConn(ctx, ks)
	return b.kv, err
}

// bucketConn returns the bucket of ks and the connection it belongs to,
// connecting first if needed.
func (s *Store) bucketConn(ctx context.Context, ks store.Keyspace) (kvBucket, *conn, error) {
	if ks != store.Durable && ks != store.Ephemeral {
		return kvBucket{}, nil, coordination.Errorf(coordination.Fatal, "natsstore: unknown keyspace %d", int(ks))
	}
	c, err := s.client(ctx)
	if err != nil {
		return kvBucket{}, nil, err
	}
	if err := s.awaitUp(ctx, c); err != nil {
		return kvBucket{}, nil, err
	}
	b := c.state
	if ks == store.Ephemeral {
		b = c.lease
	}
	if b.missing != nil {
		return kvBucket{}, nil, b.missing
	}
	return b, c, nil
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

// maxInFlightRetries bounds the retries of one operation after a
// replicated bucket answered that the key had a write in flight (10164).
const maxInFlightRetries = 5

// isInFlight reports whether err is code 10164: a replicated stream could
// not check the expected revision because the key had a write in flight.
// Unlike 10071 it says nothing about the key's revision, so the store
// reads the key and, if the precondition still holds, tries again (a few
// times; then it reports the precondition as lost, which callers treat as a
// lost race).
func isInFlight(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// backoff waits before retry n of an operation (2ms, doubling), or returns
// Retryable when ctx ends first.
func (s *Store) backoff(ctx context.Context, op string, ks store.Keyspace, key string, n int) error {
	t := time.NewTimer(2 * time.Millisecond << n)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return s.ctxErr(fmt.Sprintf("%s %q in %s", op, key, ks), ctx.Err())
	case <-t.C:
		return nil
	}
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
	if notSent(err) {
		return coordination.Errorf(coordination.Retryable, "natsstore: %s %q in %s: connection to NATS lost, request not sent (%w)", op, key, ks, err)
	}
	if errors.Is(err, nats.ErrDisconnected) {
		return coordination.Errorf(coordination.Retryable, "natsstore: %s %q in %s: connection to NATS lost before the reply (%w); a write may have landed", op, key, ks, err)
	}
	return coordination.Errorf(coordination.Retryable, "natsstore: %s %q in %s: %w", op, key, ks, err)
}

// notSent reports whether err is the client refusing a request because
// the connection is down and its reconnect buffer (none on the store's own
// connection) is full: nothing was sent. The client's own text, "nats:
// outbound buffer limit exceeded", would not say so.
func notSent(err error) bool {
	return errors.Is(err, nats.ErrReconnectBufExceeded)
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
