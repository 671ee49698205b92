package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// The adopt-and-retry loop of a write on a record this worker writes under
// a tenancy: the split record's fail, hand-back and completion
// (splitwrite.go) and the progress record's commit (commitwrite.go)
// (docs/protocol.md, "Commits", "Hand-back, fail, quarantine"). A lost CAS
// is judged from the record read after it: the intended write landed
// unseen (adopted), the record still belongs to this tenancy and moved
// because of an earlier write of it that landed unseen (rebase and retry
// once), or the tenancy is fenced.

// CASResult is how one fenced write on a record of type R resolved.
type CASResult[R any] struct {
	Outcome CASOutcome
	Err     error
	Rec     R      // the record as written or last read
	Rev     uint64 // rec's revision; 0: no record learned
	Adopted bool   // the write was found landed after a lost CAS
}

// CASWrite is one record type's part in the loop.
type CASWrite[R any] struct {
	Split coordination.SplitID
	Key   string
	Doing string // what the write does to split, for error reasons ("committing")
	// Build returns the record to write over base and its encoding, or a
	// result that ends the write without I/O (stop).
	Build func(base R) (want R, b []byte, stop *CASResult[R])
	// Classify judges the record got (found=false: absent) read after a
	// lost CAS of want.
	Classify func(want R, found bool, got R) ConflictClass
	Decode   func(key string, b []byte) (R, error) // the job's fingerprint bound by the writer
	// Recreate, when set, heals a record found absent after a lost CAS by
	// creating b; it returns the record read or created (docs/protocol.md,
	// "Missing records"), or a Fatal error (a store rollback) that ends the
	// write as CASFatal.
	Recreate func(ctx context.Context, b []byte) (e store.Entry, found, recreated bool, err error)
	// Rollback: a record read below the revision this write started from
	// means the store lost acknowledged writes (docs/protocol.md, "Store
	// rollback"). Only a record this tenancy alone writes can tell.
	Rollback bool
	// Rebased, when set, learns the record the write rebased onto when it
	// gives up after its retry.
	Rebased func(got R, rev uint64)
	// Payload, when set, runs in the transaction of each update attempt
	// (store.TxUpdater; update): it lands exactly when the update does.
	Payload store.TxFunc
}

// what names the write for an error reason ("committing split a"); built
// only on the error paths.
func (w CASWrite[R]) what() string { return fmt.Sprintf("%s split %s", w.Doing, w.Split) }

// CASAdopt runs w from base at revision rev with the adopt-and-retry-once
// rule.
func CASAdopt[R any](ctx context.Context, v *Env, w CASWrite[R], base R, rev uint64) CASResult[R] {
	for try := 0; ; try++ {
		want, b, stop := w.Build(base)
		if stop != nil {
			return *stop
		}
		start := time.Now()
		r, ok, err := update(ctx, v, w.Key, b, store.Revision(rev), w.Payload)
		v.Metrics.Write(WriteLabel(ok, err), time.Since(start))
		switch {
		case err != nil:
			return CASResult[R]{Outcome: CASUnconfirmed, Err: StoreErr(w.what(), err), Rec: base, Rev: rev}
		case ok:
			return CASResult[R]{Outcome: CASLanded, Rec: want, Rev: uint64(r)}
		}
		e, found, err := v.Store.Get(ctx, store.Durable, w.Key)
		if err == nil && !found && w.Recreate != nil {
			var recreated bool
			if e, found, recreated, err = w.Recreate(ctx, b); recreated {
				return CASResult[R]{Outcome: CASLanded, Rec: want, Rev: uint64(e.Revision)}
			}
			if coordination.KindOf(err) == coordination.Fatal {
				return CASResult[R]{Outcome: CASFatal, Err: StoreErr(w.what(), err)}
			}
		}
		if err != nil {
			return CASResult[R]{Outcome: CASUnconfirmed, Err: StoreErr(w.what(), err), Rec: base, Rev: rev}
		}
		if w.Rollback && found && uint64(e.Revision) < rev {
			return CASResult[R]{Outcome: CASFatal, Err: StoreRolledBack(v.Raw, store.Durable, w.Key, uint64(e.Revision), rev)}
		}
		var got R
		if found {
			if got, err = w.Decode(w.Key, e.Value); err != nil {
				return CASResult[R]{Outcome: CASFatal, Err: err}
			}
		}
		switch w.Classify(want, found, got) {
		case ConflictLanded:
			return CASResult[R]{Outcome: CASLanded, Rec: got, Rev: uint64(e.Revision), Adopted: true}
		case ConflictFenced:
			res := CASResult[R]{Outcome: CASFenced, Err: FencedErr(w.Split)}
			if found {
				res.Rec, res.Rev = got, uint64(e.Revision)
			}
			return res
		}
		base, rev = got, uint64(e.Revision)
		if try == 1 {
			if w.Rebased != nil {
				w.Rebased(got, rev)
			}
			return CASResult[R]{Outcome: CASUnconfirmed, Err: keptMoving(w.what()), Rec: got, Rev: rev}
		}
	}
}

// update runs one compare-and-swap of a fenced write: a plain Update, or,
// with a payload, the store's UpdateTx, whose transaction holds both
// (docs/protocol.md, "Commits"). A store without transactions refuses a
// payload as Fatal before any write.
func update(ctx context.Context, v *Env, key string, b []byte, rev store.Revision, payload store.TxFunc) (store.Revision, bool, error) {
	if payload == nil {
		return v.Store.Update(ctx, store.Durable, key, b, rev)
	}
	tu, ok := v.Store.(store.TxUpdater)
	if !ok {
		return 0, false, noTx(v.Store)
	}
	return tu.UpdateTx(ctx, store.Durable, key, b, rev, payload)
}

// ConflictClass is how a lost CAS on a record this worker writes is judged
// from the record read after it (docs/protocol.md, "Commits" and
// "Hand-back, fail, quarantine").
type ConflictClass int

// CASOutcome is how a fenced write resolved.
type CASOutcome int

// WriteLabel is the outcome label of a fenced write's reply for
// coordination_writes metrics.
func WriteLabel(ok bool, err error) string {
	switch {
	case err != nil:
		return "error"
	case ok:
		return "ok"
	}
	return "conflict"
}

const (
	ConflictLanded ConflictClass = iota + 1 // the intended write (or a completion of this tenancy) is there
	ConflictAdopt                           // still this tenancy's and live: adopt, retry once
	ConflictFenced                          // another tenancy, terminal, or absent
)

const (
	CASLanded CASOutcome = iota + 1
	CASFenced
	CASUnconfirmed
	CASFatal
)
