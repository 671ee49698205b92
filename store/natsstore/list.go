package natsstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// List returns every live key under prefix (plain string prefix): the
// snapshot a watch of prefix would deliver, read to the same end (see
// snapshotEnd), so it holds every key live for the whole call, once, at
// the latest revision the snapshot delivered; a key the snapshot saw
// deleted is left out. Entries come in revision order. With nothing under
// the prefix's subject filter, List needs no consumer.
func (s *Store) List(ctx context.Context, ks store.Keyspace, prefix string) (entries []store.Entry, err error) {
	err = s.resend(ctx, func() (err error) {
		entries, err = s.list(ctx, ks, prefix)
		return err
	})
	return entries, err
}

// list is one attempt of List.
func (s *Store) list(ctx context.Context, ks store.Keyspace, prefix string) ([]store.Entry, error) {
	b, _, err := s.bucketConn(ctx, ks)
	if err != nil {
		return nil, err
	}
	filter := subjectFilter(prefix)
	l := listing{s: s, ks: ks, prefix: prefix, bucket: b.kv.Bucket(),
		last: func(ctx context.Context) (uint64, error) { return b.lastUnder(ctx, filter) }}
	floor, err := l.last(ctx)
	if err != nil {
		return nil, s.watchErr(ctx, l.bucket, err)
	}
	if floor == 0 {
		return []store.Entry{}, nil
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kw, err := b.kv.Watch(lctx, filter)
	if err != nil {
		return nil, s.watchErr(ctx, l.bucket, err)
	}
	defer func() { _ = kw.Stop() }()
	return l.read(lctx, kw, floor)
}

// listing is one List call's reading of its snapshot.
type listing struct {
	s      *Store
	ks     store.Keyspace
	prefix string
	bucket string
	last   func(context.Context) (uint64, error) // the bucket's last sequence under the filter
}

// read folds the replay of kw, whose floor was read before its consumer was
// created, into the latest entry of each live key, until the snapshot's end.
func (l listing) read(ctx context.Context, kw jetstream.KeyWatcher, floor uint64) ([]store.Entry, error) {
	end := newSnapshotEnd(l.last, floor)
	latest := map[string]store.Entry{}
	for {
		select {
		case <-ctx.Done():
			return nil, l.s.ctxErr("listing bucket "+l.bucket, ctx.Err())
		case r := <-end.answers:
			complete, err := end.settle(ctx, r)
			if err != nil {
				return nil, l.s.watchErr(ctx, l.bucket, err)
			}
			if complete {
				return slices.SortedFunc(maps.Values(latest), func(a, b store.Entry) int { return cmp.Compare(a.Revision, b.Revision) }), nil
			}
		case e, ok := <-kw.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil, l.s.ctxErr("listing bucket "+l.bucket, ctx.Err())
				}
				return nil, coordination.Errorf(coordination.Retryable, "natsstore: listing bucket %s: the NATS client ended the listing (connection closed or consumer lost)", l.bucket)
			}
			if e == nil { // the client's end of the initial values: a hint only
				end.read(ctx)
				continue
			}
			end.saw(ctx, e.Revision())
			if !strings.HasPrefix(e.Key(), l.prefix) {
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				delete(latest, e.Key())
				continue
			}
			latest[e.Key()] = entry(e)
			l.s.puts.note(l.ks, e.Key(), store.Revision(e.Revision()))
		}
	}
}
