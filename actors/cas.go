package actors

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

// casResult is how one fenced write on a record of type R resolved.
type casResult[R any] struct {
	outcome casOutcome
	err     error
	rec     R      // the record as written or last read
	rev     uint64 // rec's revision; 0: no record learned
	adopted bool   // the write was found landed after a lost CAS
}

// casWrite is one record type's part in the loop.
type casWrite[R any] struct {
	split coordination.SplitID
	key   string
	doing string // what the write does to split, for error reasons ("committing")
	// build returns the record to write over base and its encoding, or a
	// result that ends the write without I/O (stop).
	build func(base R) (want R, b []byte, stop *casResult[R])
	// classify judges the record got (found=false: absent) read after a
	// lost CAS of want.
	classify func(want R, found bool, got R) conflictClass
	decode   func(key string, b []byte, fp uint64) (R, error)
	// recreate, when set, heals a record found absent after a lost CAS by
	// creating b; it returns the record read or created (docs/protocol.md,
	// "Missing records").
	recreate func(ctx context.Context, b []byte) (e store.Entry, found, recreated bool, err error)
	// rollback: a record read below the revision this write started from
	// means the store lost acknowledged writes (docs/protocol.md, "Store
	// rollback"). Only a record this tenancy alone writes can tell.
	rollback bool
	// rebased, when set, learns the record the write rebased onto when it
	// gives up after its retry.
	rebased func(got R, rev uint64)
}

// what names the write for an error reason ("committing split a"); built
// only on the error paths.
func (w casWrite[R]) what() string { return fmt.Sprintf("%s split %s", w.doing, w.split) }

// casAdopt runs w from base at revision rev with the adopt-and-retry-once
// rule.
func casAdopt[R any](ctx context.Context, v *env, w casWrite[R], base R, rev uint64) casResult[R] {
	for try := 0; ; try++ {
		want, b, stop := w.build(base)
		if stop != nil {
			return *stop
		}
		start := time.Now()
		r, ok, err := v.st.Update(ctx, store.Durable, w.key, b, store.Revision(rev))
		v.met.write(writeLabel(ok, err), time.Since(start))
		switch {
		case err != nil:
			return casResult[R]{outcome: casUnconfirmed, err: storeErr(w.what(), err), rec: base, rev: rev}
		case ok:
			return casResult[R]{outcome: casLanded, rec: want, rev: uint64(r)}
		}
		e, found, err := v.st.Get(ctx, store.Durable, w.key)
		if err == nil && !found && w.recreate != nil {
			var recreated bool
			if e, found, recreated, err = w.recreate(ctx, b); recreated {
				return casResult[R]{outcome: casLanded, rec: want, rev: uint64(e.Revision)}
			}
		}
		if err != nil {
			return casResult[R]{outcome: casUnconfirmed, err: storeErr(w.what(), err), rec: base, rev: rev}
		}
		if w.rollback && found && uint64(e.Revision) < rev {
			return casResult[R]{outcome: casFatal, err: storeRolledBack(store.Durable, w.key, uint64(e.Revision), rev)}
		}
		var got R
		if found {
			if got, err = w.decode(w.key, e.Value, v.fp.Load()); err != nil {
				return casResult[R]{outcome: casFatal, err: err}
			}
		}
		switch w.classify(want, found, got) {
		case conflictLanded:
			return casResult[R]{outcome: casLanded, rec: got, rev: uint64(e.Revision), adopted: true}
		case conflictFenced:
			res := casResult[R]{outcome: casFenced, err: fencedErr(w.split)}
			if found {
				res.rec, res.rev = got, uint64(e.Revision)
			}
			return res
		}
		base, rev = got, uint64(e.Revision)
		if try == 1 {
			if w.rebased != nil {
				w.rebased(got, rev)
			}
			return casResult[R]{outcome: casUnconfirmed, err: keptMoving(w.what()), rec: got, rev: rev}
		}
	}
}

// conflictClass is how a lost CAS on a record this worker writes is judged
// from the record read after it (docs/protocol.md, "Commits" and
// "Hand-back, fail, quarantine").
type conflictClass int

// casOutcome is how a fenced write resolved.
type casOutcome int

// writeLabel is the outcome label of a fenced write's reply for
// coordination_writes metrics.
func writeLabel(ok bool, err error) string {
	switch {
	case err != nil:
		return "error"
	case ok:
		return "ok"
	}
	return "conflict"
}

const (
	conflictLanded conflictClass = iota + 1 // the intended write (or a completion of this tenancy) is there
	conflictAdopt                           // still this tenancy's and live: adopt, retry once
	conflictFenced                          // another tenancy, terminal, or absent
)

const (
	casLanded casOutcome = iota + 1
	casFenced
	casUnconfirmed
	casFatal
)
