package coordctl

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

var requeueCommand = command{
	name:  "requeue",
	args:  " SPLIT... | -all-quarantined",
	about: "Makes quarantined splits runnable again with fresh attempts: one compare-and-swap of each\nsplit record at the revision read (docs/protocol.md, \"Requeue\"). Committed progress is\nkept, so the next owner resumes at it. Safe while workers run: live workers claim the split\nlike any handed-back one; workers that already reported Stalled are done, so restart them.",
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		all := fs.Bool("all-quarantined", false, "requeue every quarantined split of the job")
		return func(ctx context.Context, e *env) int {
			if *all == (len(e.args) > 0) {
				fmt.Fprintln(e.stderr, "coordctl requeue: name the splits to requeue or pass -all-quarantined, not both")
				return ExitUsage
			}
			ids := make([]coordination.SplitID, 0, len(e.args))
			for _, a := range e.args {
				id, err := coordination.NewSplitID(a)
				if err != nil {
					fmt.Fprintf(e.stderr, "coordctl requeue: argument %q: %v\n", a, err)
					return ExitUsage
				}
				ids = append(ids, id)
			}
			st, ctx, release, err := e.openBounded(ctx)
			if err != nil {
				return e.failf("%v", err)
			}
			defer release()
			j, err := readJob(ctx, st, false)
			if err != nil {
				return e.failf("reading %s: %v", e.conn.where(), err)
			}
			if *all {
				for _, s := range j.splits {
					if s.rec.Status == protocol.StatusQuarantined {
						ids = append(ids, s.rec.ID)
					}
				}
				if len(ids) == 0 {
					fmt.Fprintln(e.stdout, "no quarantined splits")
					return ExitOK
				}
			}
			code := ExitOK
			for _, id := range ids {
				r, err := requeue(ctx, st, j.fp, id, time.Now())
				if err != nil {
					fmt.Fprintf(e.stderr, "coordctl requeue: %v\n", err)
					code = ExitError
					continue
				}
				fmt.Fprintf(e.stdout, "requeued %s: runnable with 0 of its attempts used (it had used %d), epoch %d; its committed progress is kept\n", id, r.Attempts, r.Epoch)
			}
			if code == ExitOK && j.plan.Finality == coordination.PlanFinal {
				fmt.Fprintln(e.stdout, "live workers claim the requeued splits; if the job already reported Stalled, start its workers again")
			}
			return code
		}
	},
}

// maxRequeueRaces bounds the re-reads of a requeue whose CAS lost.
const maxRequeueRaces = 3

// requeue turns the quarantined split id runnable with fresh attempts by a
// CAS of its split record at the revision read, and returns the record as
// it was. A split that is not quarantined is refused, naming its status.
func requeue(ctx context.Context, st store.Store, fp uint64, id coordination.SplitID, now time.Time) (protocol.SplitRecord, error) {
	key := protocol.SplitKey(id)
	for range maxRequeueRaces {
		e, ok, err := st.Get(ctx, store.Durable, key)
		if err != nil {
			return protocol.SplitRecord{}, fmt.Errorf("split %s: reading %s: %w", id, key, err)
		}
		if !ok {
			return protocol.SplitRecord{}, fmt.Errorf("split %s: no such split in this job (no %s record); check the id with coordctl status -splits", id, key)
		}
		r, err := protocol.DecodeSplit(key, e.Value, fp)
		if err != nil {
			return protocol.SplitRecord{}, err
		}
		if r.Status != protocol.StatusQuarantined {
			return protocol.SplitRecord{}, fmt.Errorf("split %s is %s, not quarantined; only quarantined splits can be requeued", id, r.Status)
		}
		_, ok, err = st.Update(ctx, store.Durable, key, protocol.EncodeSplit(requeued(r, now.UnixMilli())), e.Revision)
		if err != nil {
			return protocol.SplitRecord{}, fmt.Errorf("split %s: writing %s (it may have landed; run status to see): %w", id, key, err)
		}
		if ok {
			return r, nil
		}
	}
	return protocol.SplitRecord{}, fmt.Errorf("split %s: %s kept changing under the requeue (%d lost compare-and-swaps); try again", id, key, maxRequeueRaces)
}

// requeued returns the split record of a requeue of quarantined r
// (docs/protocol.md, "Requeue"): status runnable, attempts 0, no owner;
// the epoch stays, so the next claim raises it above every earlier tenancy.
func requeued(r protocol.SplitRecord, nowMs int64) protocol.SplitRecord {
	r.Status = protocol.StatusRunnable
	r.Attempts = 0
	r.Owner, r.Nonce = "", ""
	r.WrittenAtMs = nowMs
	return r
}
