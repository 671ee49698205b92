package testkit

import (
	"context"
	"fmt"
	"sync"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Recorder watches a shared store's split and progress records (Durable
// keys under "job.split." and "progress.") and feeds every version, in
// revision order per key, to a [Checker]. It never writes. Start it before
// any worker writes, so that its snapshot is empty and it observes every
// version.
type Recorder struct {
	checker *Checker
	fp      uint64
	w       store.Watcher
	done    chan struct{} // closed when the feeding goroutine ends

	mu      sync.Mutex
	lastRev map[string]store.Revision
	synced  bool
	err     error
}

// NewRecorder starts watching st and feeding c. fingerprint is the job's
// planner fingerprint; a progress record that does not decode with it is
// reported as a violation. Stop the recorder with [Recorder.Stop].
func NewRecorder(ctx context.Context, st store.Store, fingerprint string, c *Checker) (*Recorder, error) {
	w, err := st.Watch(ctx, store.Durable, "")
	if err != nil {
		return nil, err
	}
	r := &Recorder{
		checker: c,
		fp:      protocol.Fingerprint(fingerprint),
		w:       w,
		done:    make(chan struct{}),
		lastRev: make(map[string]store.Revision),
	}
	go r.run()
	return r, nil
}

func (r *Recorder) run() {
	defer close(r.done)
	for ev := range r.w.Events() {
		switch ev.Kind {
		case store.SnapshotDone:
			r.mu.Lock()
			r.synced = true
			r.mu.Unlock()
		case store.Put:
			r.put(ev.Entry)
		case store.Delete:
			r.del(ev.Entry)
		}
	}
	if err := r.w.Err(); err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		r.checker.mu.Lock()
		r.checker.violate("recorder: watch on the records broke, later writes are unchecked: %v", err)
		r.checker.mu.Unlock()
	}
}

// fresh dedupes by revision (a watch may deliver duplicates).
func (r *Recorder) fresh(key string, rev store.Revision) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev <= r.lastRev[key] {
		return false
	}
	r.lastRev[key] = rev
	return true
}

func (r *Recorder) put(e store.Entry) {
	kind, _ := protocol.ParseKey(store.Durable, e.Key)
	if (kind != protocol.KeySplitRecord && kind != protocol.KeyProgress) || !r.fresh(e.Key, e.Revision) {
		return
	}
	v, err := r.decode(kind, e)
	if err != nil {
		r.checker.mu.Lock()
		r.checker.violate("recorder: %s rev %d does not decode: %v", e.Key, e.Revision, err)
		r.checker.mu.Unlock()
		return
	}
	r.checker.Write(v)
}

// decode turns a split or progress record entry into its version.
func (r *Recorder) decode(kind protocol.KeyKind, e store.Entry) (RecordVersion, error) {
	if kind == protocol.KeyProgress {
		p, err := protocol.DecodeProgress(e.Key, e.Value, r.fp)
		return RecordVersion{Split: p.ID, Revision: e.Revision, Progress: true, Epoch: p.Epoch, Owner: p.Owner,
			Watermark: p.Watermark, State: p.State, Completed: p.Completed}, err
	}
	s, err := protocol.DecodeSplit(e.Key, e.Value, r.fp)
	return RecordVersion{Split: s.ID, Revision: e.Revision, Epoch: s.Epoch, Owner: s.Owner, Nonce: s.Nonce,
		Attempts: s.Attempts, Status: s.Status.String()}, err
}

func (r *Recorder) del(e store.Entry) {
	kind, suffix := protocol.ParseKey(store.Durable, e.Key)
	if (kind != protocol.KeySplitRecord && kind != protocol.KeyProgress) || !r.fresh(e.Key, e.Revision) {
		return
	}
	r.checker.Write(RecordVersion{Split: coordination.SplitID(suffix), Revision: e.Revision, Progress: kind == protocol.KeyProgress, Deleted: true})
}

// Synced reports whether the recorder's snapshot is complete.
func (r *Recorder) Synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.synced
}

// Stop ends the watch and waits for the feeding goroutine.
func (r *Recorder) Stop() {
	r.w.Stop()
	<-r.done
}

// String describes the recorder's state for failure messages.
func (r *Recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("recorder{keys %d synced %t err %v}", len(r.lastRev), r.synced, r.err)
}
