package testkit

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Missing records (docs/protocol.md, "Missing records"): a progress record
// deleted outside the library heals, whether its split is held or idle, and
// the job still reaches its verdict.

// deleteProgress deletes split's progress record as an operator would.
func deleteProgress(t *testing.T, f *Fleet, split coordination.SplitID) {
	t.Helper()
	deleteRecord(t, f, protocol.ProgressKey(split))
}

// readProgress returns split's stored progress record; false if absent.
func readProgress(t *testing.T, f *Fleet, split coordination.SplitID) (protocol.ProgressRecord, bool) {
	t.Helper()
	key := protocol.ProgressKey(split)
	e, ok, err := f.Store().Get(t.Context(), store.Durable, key)
	if err != nil || !ok {
		return protocol.ProgressRecord{}, false
	}
	p, err := protocol.DecodeProgress(key, e.Value, protocol.Fingerprint(jobFP))
	if err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	return p, true
}

// The holder of a split whose progress record was deleted recreates it with
// its next commit: the commit lands, nothing committed regresses, the split
// stays held (no Lost, no replay).
func TestFleetHeldSplitRecreatesADeletedProgressRecord(t *testing.T) {
	var logs logBuffer
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		untilCommitted(f, w1, splits)
		victim := splits[0]
		h, _ := w1.Tenancy(victim)
		deleteProgress(t, f, victim)
		if err := w1.Commit(victim, coordination.SplitProgress{Watermark: h.Committed.Watermark + 1}); err != nil {
			t.Fatalf("commit after the deletion = %v, want nil (the record recreated)", err)
		}
		got, ok := readProgress(t, f, victim)
		if !ok || got.Epoch != uint64(h.Epoch) || got.Owner != "w1" || got.Watermark == nil || *got.Watermark != h.Committed.Watermark+1 {
			t.Fatalf("progress record after the commit = %+v (found %v), want epoch %d, owner w1, watermark %d", got, ok, h.Epoch, h.Committed.Watermark+1)
		}
		f.Advance(3 * f.Step())
		if n := lostSplits(w1)[victim]; n != 0 || !w1.Holds(victim) {
			t.Fatalf("w1 lost %s %d times (holds it: %v), want kept", victim, n, w1.Holds(victim))
		}
		if !strings.Contains(logs.String(), "progress record missing (deleted outside the library); recreated from this tenancy's commit") {
			t.Fatal("no warning names the recreated record")
		}
		w1.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict = %#v, want AllComplete", w1.Verdict())
		}
	}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
}

// An idle split (handed back) whose progress record was deleted is claimed
// as usual: the fence recreates the record empty at the claim's epoch, the
// split replays from its start (at-least-once: nothing is skipped), a
// warning names it, and the job reaches its verdict.
func TestFleetIdleSplitRecreatesADeletedProgressRecordEmpty(t *testing.T) {
	var logs logBuffer
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p)
		w1.Policy.Work = WorkCommit
		untilCommitted(f, w1, splits)
		if err := w1.Depart(); err != nil {
			t.Fatalf("Depart: %v", err)
		}
		victim := splits[0]
		deleteProgress(t, f, victim)
		w2 := f.Start("w2", p)
		f.Until("w2 holds both splits", func() bool { return allHeld(f, splits, "w2") })
		h, _ := w2.Tenancy(victim)
		if h.Carried != nil {
			t.Fatalf("w2 gained %s with progress %+v, want none (replay from the start)", victim, h.Carried)
		}
		got, ok := readProgress(t, f, victim)
		rec, _ := f.Record(victim)
		if !ok || got.Epoch != rec.Epoch || got.Epoch != uint64(h.Epoch) || got.Owner != "w2" || got.Watermark != nil {
			t.Fatalf("recreated progress record = %+v (found %v), want epoch %d (the split record's), owner w2, no watermark", got, ok, rec.Epoch)
		}
		if !strings.Contains(logs.String(), "progress record missing (deleted outside the library); recreating it empty, the split replays from its start") ||
			!strings.Contains(logs.String(), "split="+string(victim)) {
			t.Fatal("no warning names the split whose record was recreated")
		}
		w2.Policy.Work = WorkComplete
		f.Until("the verdict", f.AllSettled)
		if _, ok := w2.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("verdict = %#v, want AllComplete", w2.Verdict())
		}
	}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
}

// deleteRecord deletes a durable record as an operator would.
func deleteRecord(t *testing.T, f *Fleet, key string) {
	t.Helper()
	e, ok, err := f.Store().Get(t.Context(), store.Durable, key)
	if err != nil || !ok {
		t.Fatalf("read %s: found=%v err=%v", key, ok, err)
	}
	if ok, err := f.Store().Delete(t.Context(), store.Durable, key, e.Revision); !ok || err != nil {
		t.Fatalf("delete %s: ok=%v err=%v", key, ok, err)
	}
}

// wantSameFatal checks that every member failed Fatal with a reason naming
// key and that none reached a verdict.
func wantSameFatal(t *testing.T, key string, ms ...*Member) {
	t.Helper()
	for _, m := range ms {
		if coordination.KindOf(m.Err()) != coordination.Fatal || !strings.Contains(m.Err().Error(), key) || m.Verdict() != nil {
			t.Errorf("%s: err = %v, verdict = %#v; want a Fatal naming %s and no verdict", m.ID(), m.Err(), m.Verdict(), key)
		}
	}
}

// A split record deleted while workers run wedged the job (no verdict, no
// error). Every worker that sees the deletion fails Fatal naming the key, and
// a worker that joins afterwards fails the same way: as the new leader it
// would seed the split again, but its progress record shows it was owned,
// so a split record at epoch 0 would lose every fence.
func TestFleetDeletedSplitRecordFailsEveryWorker(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		w1, w2 := f.Start("w1", p), f.Start("w2", p)
		f.Until("both hold splits", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) > 0 && len(w2.HeldIDs()) > 0 })
		key := protocol.SplitKey(splits[0])
		deleteRecord(t, f, key)
		for _, w := range []*Member{w1, w2} {
			w.Policy.Work, w.Policy.ExpectFatal = WorkComplete, true
		}
		f.Until("both failed", func() bool { return w1.Err() != nil && w2.Err() != nil })
		wantSameFatal(t, key, w1, w2)
		f.Advance(6 * f.Step()) // their presence expires
		w3 := f.Start("w3", p)
		w3.Policy.Work, w3.Policy.ExpectFatal = WorkComplete, true
		f.Until("the late joiner failed", func() bool { return w3.Err() != nil })
		wantSameFatal(t, key, w3)
	})
}

// A spec record deleted before its split is claimed: the split cannot be
// delivered without its descriptor, so every worker that is given it fails
// Fatal naming the spec's key, and none reports a verdict.
func TestFleetDeletedSpecRecordFailsEveryWorker(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(6)
		w1, w2 := f.Start("w1", p, setMaxInFlight(1)), f.Start("w2", p, setMaxInFlight(1))
		f.Until("both hold a split", func() bool { return len(w1.HeldIDs()) == 1 && len(w2.HeldIDs()) == 1 })
		var key string
		for _, s := range splits {
			if len(f.Holders(s)) == 0 {
				key = protocol.SpecKey(s)
				break
			}
		}
		deleteRecord(t, f, key)
		for _, w := range []*Member{w1, w2} {
			w.Policy.Work, w.Policy.ExpectFatal = WorkComplete, true
		}
		f.Until("both failed", func() bool { return w1.Err() != nil && w2.Err() != nil })
		wantSameFatal(t, key, w1, w2)
	})
}

// The split record of a split never owned (epoch 0, no tenancy, no attempt)
// holds nothing the planner cannot give again: after the fleet that saw its
// deletion failed, the next leader seeds it again as it was and the job
// completes.
func TestFleetDeletedRecordOfANeverOwnedSplitIsSeededAgain(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(2)
		w1 := f.Start("w1", p, setMaxInFlight(1))
		f.Until("w1 holds one split", func() bool { return len(w1.HeldIDs()) == 1 })
		victim := splits[0]
		if w1.Holds(victim) {
			victim = splits[1]
		}
		key := protocol.SplitKey(victim)
		deleteRecord(t, f, key)
		f.Until("w1 failed", func() bool { return w1.Err() != nil })
		wantSameFatal(t, key, w1)
		f.Advance(6 * f.Step()) // its presence expires
		w2 := f.Start("w2", p)
		w2.Policy.Work = WorkComplete
		f.Until("the verdict", func() bool { return w2.Verdict() != nil })
		if _, ok := w2.Verdict().(coordination.AllComplete); !ok || w2.Err() != nil {
			t.Fatalf("verdict = %#v, err %v; want AllComplete", w2.Verdict(), w2.Err())
		}
	})
}
