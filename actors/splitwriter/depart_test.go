package splitwriter

import (
	"slices"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store/memstore"
)

// Depart returns exactly the leftovers of this session (docs/protocol.md,
// "Departure"): runnable records naming this worker and its current
// session that it does not hold and does not hand back in the same batch.
// A record of an earlier session of this instance, of another worker, a
// terminal one or an unowned one is left alone.
func TestDepartLeftoversAreThisSessionsUnheldRecords(t *testing.T) {
	v := workertest.NewEnv(t, memstore.New(time.Second)) // id "me", session "n"
	sw := New(v)().(*splitWriterActor)
	rec := func(owner, nonce string, st protocol.Status) protocol.SplitRecord {
		return protocol.SplitRecord{Owner: owner, Nonce: nonce, Epoch: 3, Status: st}
	}
	for id, r := range map[coordination.SplitID]protocol.SplitRecord{
		"leftover":        rec("me", "n", protocol.StatusRunnable),
		"held":            rec("me", "n", protocol.StatusRunnable),
		"handed-back":     rec("me", "n", protocol.StatusRunnable),
		"earlier-session": rec("me", "old", protocol.StatusRunnable),
		"other-worker":    rec("w2", "n", protocol.StatusRunnable),
		"completed":       rec("me", "n", protocol.StatusCompleted),
		"quarantined":     rec("me", "", protocol.StatusQuarantined),
		"unowned":         rec("", "", protocol.StatusRunnable),
	} {
		sw.records[id] = worker.SplitEntry{Rec: r, Rev: 7}
	}
	sw.reg.start("held", worker.Tenancy{Epoch: 3, Nonce: "n"})
	deadline := time.Unix(100, 0)
	ops := sw.departLeftovers([]wire.HeldSplit{{Split: "handed-back", Epoch: 3}}, 9, deadline)
	var got []coordination.SplitID
	for _, o := range ops {
		op, ok := o.(departLeftoverOp)
		if !ok || op.batch != 9 || !op.deadline.Equal(deadline) {
			t.Errorf("op %+v, want a departure leftover return in batch 9 with the batch's deadline", o)
		}
		got = append(got, o.target())
	}
	if !slices.Equal(got, []coordination.SplitID{"leftover"}) {
		t.Errorf("leftovers returned on Depart: %v, want [leftover]", got)
	}
	// The session renewed its nonce (a self-fence): the record is an earlier
	// session's now, a Reclaim candidate, not this session's leftover.
	sw.nonce = "n2" // as a live SessionChanged sets it
	if ops := sw.departLeftovers(nil, 10, deadline); len(ops) != 0 {
		t.Errorf("after a new session: %d leftovers, want none", len(ops))
	}
}
