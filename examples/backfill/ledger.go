package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spate-go/coordination/internal/protocol"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store/natsstore"
)

// ledgerTimeout bounds one ledger write or the initial read.
const ledgerTimeout = 5 * time.Second

// delivery is one ledger entry: the records one tenancy of one split has
// delivered so far, a contiguous range (a lane reads in order from where it
// resumed). Its key is <split>.<worker>.<run>.<lane>: lane ids are minted
// per worker and restart with each run, so only all four together give
// every tenancy of every worker of every process its own key, and a put
// only ever grows its range.
type delivery struct {
	Split  coordination.SplitID `json:"split"`
	Worker string               `json:"worker"`
	Start  int64                `json:"start"`
	End    int64                `json:"end"`
}

// ledger is the sink every worker of every process delivers to: a KV bucket
// of the job's NATS server (ledgerBucket) holding one delivery per tenancy.
// A lane records a batch there before acknowledging it, so everything a
// committed watermark covers is in the ledger, even after a kill -9, and any
// process (or a -verify run) can prove from the store alone that nothing was
// lost. A watch keeps a local mirror of the whole bucket for the progress
// display, the takeover notes and the report. Safe for concurrent use.
type ledger struct {
	b ledgerBackend

	mu      sync.Mutex
	entries map[string]delivery // the mirror, by key
}

// ledgerBackend is where a ledger lives: a KV bucket of the job's NATS
// server (natsLedger), or a store of its own in the job's PostgreSQL
// database (pgLedger, see pgledger.go). Each keeps the ledger's mirror
// current with every entry, whichever process wrote it, until close.
type ledgerBackend interface {
	// put writes key durably.
	put(ctx context.Context, key string, value []byte) error
	// readAll applies every entry there now to the ledger's mirror.
	readAll(ctx context.Context) error
	// close stops following the entries and drops the connection.
	close()
}

// natsLedger is a ledger's KV bucket and the watch that mirrors it.
type natsLedger struct {
	l    *ledger
	nc   *nats.Conn
	kv   jetstream.KeyValue
	w    jetstream.KeyWatcher
	done chan struct{} // closed when the mirror goroutine has exited
}

// ledgerBucket names job's ledger bucket.
func ledgerBucket(job string) string { return "backfill_" + job + "_ledger" }

// errUnreachable marks a NATS server that could not be reached at all.
var errUnreachable = errors.New("unreachable")

// openLedger connects to the NATS server at url, creates job's ledger bucket
// if needed and returns once the mirror holds every entry already there.
func openLedger(ctx context.Context, url, job string) (*ledger, error) {
	return connectLedger(ctx, url, job, true)
}

// readLedger is openLedger for a job that must exist already: it creates
// nothing, and a missing ledger is an error wrapping errNoSuchJob that
// names the bucket it looked for and the jobs the server has.
func readLedger(ctx context.Context, url, job string) (*ledger, error) {
	return connectLedger(ctx, url, job, false)
}

// errNoSuchJob marks a job with no ledger on the server.
var errNoSuchJob = errors.New("no such job")

// connectLedger connects to url and opens job's ledger, creating it when
// create is set.
func connectLedger(ctx context.Context, url, job string, create bool) (*ledger, error) {
	shown := natsstore.RedactURL(url)
	// The job's inbox prefix, so the ledger needs no subscribe permission
	// beyond the job's workers' (README, "Permissions on NATS").
	nc, err := nats.Connect(url, nats.Timeout(ledgerTimeout), nats.MaxReconnects(-1), nats.Name("backfill ledger"),
		nats.CustomInboxPrefix(natsstore.InboxPrefix(job)))
	if err != nil {
		return nil, fmt.Errorf("NATS at %s is %w (%v): start a server with JetStream (nats-server -js), or omit -nats to run on an embedded one", shown, errUnreachable, err)
	}
	l, err := newLedger(ctx, nc, job, create)
	if err != nil {
		nc.Close()
		if errors.Is(err, errNoSuchJob) {
			return nil, err
		}
		return nil, fmt.Errorf("ledger of job %s on %s: %w", job, shown, err)
	}
	return l, nil
}

func newLedger(ctx context.Context, nc *nats.Conn, job string, create bool) (*ledger, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	var kv jetstream.KeyValue
	if create {
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ledgerBucket(job), History: 1})
	} else {
		kv, err = js.KeyValue(ctx, ledgerBucket(job))
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			err = noSuchJob(ctx, js, job, natsstore.RedactURL(nc.ConnectedUrl()))
		}
	}
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	l := &ledger{entries: map[string]delivery{}}
	n := &natsLedger{l: l, nc: nc, kv: kv, w: w, done: make(chan struct{})}
	l.b = n
	if err := n.initial(ctx, w); err != nil {
		_ = w.Stop()
		return nil, err
	}
	go n.mirror()
	return l, nil
}

// noSuchJob is the error for a job whose ledger is not on the server at
// url: it names the bucket and the jobs whose ledgers are there.
func noSuchJob(ctx context.Context, js jetstream.JetStream, job, url string) error {
	var jobs []string
	names := js.KeyValueStoreNames(ctx)
	for name := range names.Name() {
		if j, ok := strings.CutPrefix(name, "backfill_"); ok {
			if j, ok := strings.CutSuffix(j, "_ledger"); ok {
				jobs = append(jobs, j)
			}
		}
	}
	slices.Sort(jobs)
	there := "no backfill job has a ledger there"
	if len(jobs) > 0 {
		there = "jobs with a ledger there: " + strings.Join(jobs, ", ")
	}
	return fmt.Errorf("%w %q: NATS at %s has no ledger bucket %s (%s)", errNoSuchJob, job, url, ledgerBucket(job), there)
}

// initial applies w's initial values, up to the marker that ends them.
func (n *natsLedger) initial(ctx context.Context, w jetstream.KeyWatcher) error {
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return errors.New("ledger watch ended during its initial read")
			}
			if u == nil { // every existing entry is in
				return nil
			}
			n.apply(u)
		case <-ctx.Done():
			return fmt.Errorf("reading the ledger: %w", ctx.Err())
		}
	}
}

// refresh reads the whole ledger again, so the mirror holds at least every
// entry written before the call, whichever process wrote it.
func (l *ledger) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	return l.b.readAll(ctx)
}

// readAll reads the whole bucket again.
func (n *natsLedger) readAll(ctx context.Context) error {
	w, err := n.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("reading the ledger: %w", err)
	}
	defer func() { _ = w.Stop() }()
	return n.initial(ctx, w)
}

// mirror applies the watch's live updates until it is stopped.
func (n *natsLedger) mirror() {
	defer close(n.done)
	for u := range n.w.Updates() {
		if u != nil {
			n.apply(u)
		}
	}
}

// apply folds one KV entry into the mirror.
func (n *natsLedger) apply(u jetstream.KeyValueEntry) {
	if u.Operation() == jetstream.KeyValuePut {
		n.l.apply(u.Key(), u.Value())
	}
}

func (n *natsLedger) put(ctx context.Context, key string, value []byte) error {
	_, err := n.kv.Put(ctx, key, value)
	return err
}

// close stops the mirror and drops the connection.
func (n *natsLedger) close() {
	_ = n.w.Stop()
	<-n.done
	n.nc.Close()
}

// apply folds one entry into the mirror; an entry that does not decode is
// not one of ours and is skipped.
func (l *ledger) apply(key string, value []byte) {
	var d delivery
	if err := json.Unmarshal(value, &d); err != nil {
		return
	}
	l.put(key, d)
}

// put keeps the larger of two versions of one key (a watch may deliver an
// entry after the local write that superseded it).
func (l *ledger) put(key string, d delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.entries[key]; !ok || d.End >= old.End {
		l.entries[key] = d
	}
}

// record writes d under key: the delivery is durable when it returns nil.
func (l *ledger) record(key string, d delivery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerTimeout)
	defer cancel()
	if err := l.b.put(ctx, key, b); err != nil {
		return fmt.Errorf("recording %s %d-%d in the ledger: %w", d.Split, d.Start, d.End, err)
	}
	l.put(key, d)
	return nil
}

// previous returns the delivery of split that reached furthest, other than
// the one under key, or false when there is none.
func (l *ledger) previous(split coordination.SplitID, key string) (delivery, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best delivery
	found := false
	for k, d := range l.entries {
		if k != key && d.Split == split && (!found || d.End > best.End) {
			best, found = d, true
		}
	}
	return best, found
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

// close stops the mirror and drops the connection.
func (l *ledger) close() { l.b.close() }

// tally is what the ledger says about a job.
type tally struct {
	planned    int64            // records of the job
	delivered  int64            // records delivered at least once
	deliveries int64            // every delivery, duplicates included
	byWorker   map[string]int64 // deliveries per worker instance
	gaps       []recordRange    // planned records never delivered, in order
	residuals  int              // splits cut off at runtime that delivered records
}

// lost returns the planned records never delivered.
func (t tally) lost() int64 { return t.planned - t.delivered }

// duplicates returns the deliveries beyond each record's first.
func (t tally) duplicates() int64 { return t.deliveries - t.delivered }

// tallyOf tallies entries against the data set ds. A delivery counts for
// the planned split whose range holds it, whichever split id it was read
// under: a runtime split's residual reads part of its parent's range.
func tallyOf(ds *dataset, entries []delivery) tally {
	t := tally{planned: ds.records, byWorker: map[string]int64{}}
	bySplit := map[coordination.SplitID][]recordRange{}
	residuals := map[coordination.SplitID]bool{}
	for _, d := range entries {
		if d.End <= d.Start {
			continue
		}
		t.deliveries += d.End - d.Start
		t.byWorker[d.Worker] += d.End - d.Start
		if _, ok := protocol.ParseResidualID(d.Split); ok {
			residuals[d.Split] = true
		}
		id := ds.holder(d.Start)
		bySplit[id] = append(bySplit[id], recordRange{Start: d.Start, End: d.End})
	}
	t.residuals = len(residuals)
	for _, s := range ds.splits {
		rs := bySplit[s.ID]
		slices.SortFunc(rs, func(a, b recordRange) int { return int(a.Start - b.Start) })
		pos := s.Range.Start
		for _, r := range rs {
			if r.Start > pos {
				t.gaps = append(t.gaps, recordRange{Start: pos, End: min(r.Start, s.Range.End)})
			}
			if r.End > pos {
				t.delivered += min(r.End, s.Range.End) - max(pos, r.Start)
				pos = min(max(pos, r.End), s.Range.End)
			}
		}
		if pos < s.Range.End {
			t.gaps = append(t.gaps, recordRange{Start: pos, End: s.Range.End})
		}
	}
	return t
}
