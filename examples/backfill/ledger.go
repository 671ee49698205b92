package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// ledgerTimeout bounds one ledger write or read.
const ledgerTimeout = 5 * time.Second

// delivery is one ledger entry: the records one tenancy of one split has
// delivered so far, a contiguous range (a lane reads in order from where
// it started). Only that tenancy writes its key, and only ever grows it.
type delivery struct {
	Split  coordination.SplitID `json:"split"`
	Worker string               `json:"worker"`
	Start  int64                `json:"start"`
	End    int64                `json:"end"`
}

// ledger is the sink every worker of every process delivers to: the
// durable keys of a job of its own on the job's store (ledgerJob), one
// delivery per tenancy. A lane records a batch there before it claims the
// next, so everything a committed watermark covers is in the ledger, even
// after a kill -9, and any process (or a -verify run) can prove from the
// store alone that nothing was lost. A watch keeps a mirror of every
// entry for the progress lines, the takeover notes and the report. Safe for
// concurrent use.
type ledger struct {
	st   store.Store
	stop context.CancelFunc
	done chan struct{} // closed when the mirror goroutine has exited

	mu      sync.Mutex
	revs    map[string]store.Revision // guarded by mu: the revision of each key this process wrote
	entries map[string]delivery       // guarded by mu: the mirror
}

// openLedger reads every entry of the ledger in st and follows it until
// close, which closes st.
func openLedger(ctx context.Context, st store.Store) (*ledger, error) {
	l := &ledger{st: st, revs: map[string]store.Revision{}, entries: map[string]delivery{}, done: make(chan struct{})}
	if err := l.refresh(ctx); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	mctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go l.mirror(mctx)
	return l, nil
}

// refresh reads the whole ledger again, so the mirror holds at least every
// entry written before the call, whichever process wrote it.
func (l *ledger) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	entries, err := l.st.List(ctx, store.Durable, "")
	if err != nil {
		return fmt.Errorf("reading the ledger: %w", err)
	}
	for _, e := range entries {
		l.apply(e.Key, e.Value)
	}
	return nil
}

// mirror follows every write until ctx ends, watching again after a watch
// breaks (a restart of the server).
func (l *ledger) mirror(ctx context.Context) {
	defer close(l.done)
	for ctx.Err() == nil {
		if w, err := l.st.Watch(ctx, store.Durable, ""); err == nil {
			for ev := range w.Events() {
				if ev.Kind == store.Put {
					l.apply(ev.Entry.Key, ev.Entry.Value)
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // the server is down: try again
		}
	}
}

// apply folds one entry into the mirror, keeping the larger of two
// versions of a key (a watch may deliver an entry after the write that
// superseded it); an entry that does not decode is skipped.
func (l *ledger) apply(key string, value []byte) {
	var d delivery
	if json.Unmarshal(value, &d) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.entries[key]; !ok || d.End >= old.End {
		l.entries[key] = d
	}
}

// record writes d under key: the delivery is durable when it returns nil.
func (l *ledger) record(key string, d delivery) error {
	value, err := json.Marshal(d)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerTimeout)
	defer cancel()
	l.mu.Lock()
	rev := l.revs[key]
	l.mu.Unlock()
	var ok bool
	if rev == 0 {
		rev, ok, err = l.st.Create(ctx, store.Durable, key, value)
	} else {
		rev, ok, err = l.st.Update(ctx, store.Durable, key, value, rev)
	}
	if err == nil && !ok {
		// A write whose reply was lost landed: read the key and write again.
		var e store.Entry
		if e, ok, err = l.st.Get(ctx, store.Durable, key); err == nil && ok {
			rev, ok, err = l.st.Update(ctx, store.Durable, key, value, e.Revision)
		}
		if err == nil && !ok {
			err = errors.New("the key changed under its only writer")
		}
	}
	if err != nil {
		return fmt.Errorf("recording %s %d-%d in the ledger: %w", d.Split, d.Start, d.End, err)
	}
	l.mu.Lock()
	l.revs[key] = rev
	l.mu.Unlock()
	l.apply(key, value)
	return nil
}

// previous returns the delivery of split that reached furthest, other than
// the one under key, or nil.
func (l *ledger) previous(split coordination.SplitID, key string) *delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best *delivery
	for k, d := range l.entries {
		if k != key && d.Split == split && (best == nil || d.End > best.End) {
			best = &d
		}
	}
	return best
}

// snapshot returns a copy of every entry.
func (l *ledger) snapshot() []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]delivery, 0, len(l.entries))
	for _, d := range l.entries {
		out = append(out, d)
	}
	return out
}

// close stops the mirror and closes the store.
func (l *ledger) close() {
	l.stop()
	<-l.done
	_ = l.st.Close()
}
