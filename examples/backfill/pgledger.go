package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/pgstore"
)

// pgLedger is a ledger in the job's PostgreSQL database: the durable keys
// of a pgstore job of its own, ledgerJob(job), whose watch mirrors it. A
// key is written by one lane only, so put is a Create, then Updates at the
// revision it last wrote.
type pgLedger struct {
	l  *ledger
	st *pgstore.Store

	mu   sync.Mutex
	revs map[string]store.Revision // revision of each key this process wrote

	stop context.CancelFunc
	done chan struct{} // closed when the mirror goroutine has exited
}

// ledgerJob names job's ledger job on PostgreSQL (its schema is
// coordination_<job>_ledger).
func ledgerJob(job string) string { return job + "_ledger" }

// maxPostgresJob is the longest -job on PostgreSQL: the ledger's job name
// must fit pgstore's 50 characters.
const maxPostgresJob = 50 - len("_ledger")

// openPGLedger opens job's ledger on the database at dsn (creating it when
// create is set) and returns once the mirror holds every entry there.
func openPGLedger(ctx context.Context, dsn, job string, create bool) (*ledger, error) {
	st, err := pgstore.New(pgstore.Config{DSN: dsn, Job: ledgerJob(job), ExistingOnly: !create}, leaseDuration)
	if err != nil {
		return nil, err
	}
	l := &ledger{entries: map[string]delivery{}}
	p := &pgLedger{l: l, st: st, revs: map[string]store.Revision{}, done: make(chan struct{})}
	l.b = p
	rctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	if err := p.readAll(rctx); err != nil {
		_ = st.Close()
		if !create && coordination.KindOf(err) == coordination.Fatal {
			return nil, fmt.Errorf("%w %q: %s has no ledger (%v)", errNoSuchJob, job, pgstore.RedactDSN(dsn), err)
		}
		return nil, fmt.Errorf("ledger of job %s on %s: %w", job, pgstore.RedactDSN(dsn), err)
	}
	mctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	go p.mirror(mctx)
	return l, nil
}

func (p *pgLedger) put(ctx context.Context, key string, value []byte) error {
	p.mu.Lock()
	rev := p.revs[key]
	p.mu.Unlock()
	var ok bool
	var err error
	if rev == 0 {
		rev, ok, err = p.st.Create(ctx, store.Durable, key, value)
	} else {
		rev, ok, err = p.st.Update(ctx, store.Durable, key, value, rev)
	}
	if err == nil && !ok {
		// A write whose reply was lost landed: read the key and write again.
		var e store.Entry
		if e, ok, err = p.st.Get(ctx, store.Durable, key); err == nil && ok {
			rev, ok, err = p.st.Update(ctx, store.Durable, key, value, e.Revision)
		}
		if err == nil && !ok {
			err = errors.New("the ledger key changed under its only writer")
		}
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.revs[key] = rev
	p.mu.Unlock()
	return nil
}

func (p *pgLedger) readAll(ctx context.Context) error {
	entries, err := p.st.List(ctx, store.Durable, "")
	if err != nil {
		return err
	}
	for _, e := range entries {
		p.l.apply(e.Key, e.Value)
	}
	return nil
}

// mirror follows every write until ctx ends, watching again after a watch
// breaks (a restart of the server).
func (p *pgLedger) mirror(ctx context.Context) {
	defer close(p.done)
	for ctx.Err() == nil {
		if w, err := p.st.Watch(ctx, store.Durable, ""); err == nil {
			for ev := range w.Events() {
				if ev.Kind == store.Put {
					p.l.apply(ev.Entry.Key, ev.Entry.Value)
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

func (p *pgLedger) close() {
	p.stop()
	<-p.done
	_ = p.st.Close()
}
