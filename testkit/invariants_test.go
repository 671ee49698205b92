package testkit

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func wm(n int64) *int64 { return &n }

// sv builds a runnable split record version of split "s".
func sv(rev uint64, epoch uint64, owner string, attempts uint32) RecordVersion {
	return RecordVersion{Split: "s", Revision: store.Revision(rev), Epoch: epoch, Owner: owner, Attempts: attempts, Status: "runnable"}
}

// pv builds a progress record version of split "s".
func pv(rev uint64, epoch uint64, owner string, watermark *int64) RecordVersion {
	return RecordVersion{Split: "s", Revision: store.Revision(rev), Progress: true, Epoch: epoch, Owner: owner, Watermark: watermark}
}

func completed(v RecordVersion) RecordVersion {
	if v.Progress {
		v.Completed = true
	} else {
		v.Status = "completed"
	}
	return v
}

func quarantined(v RecordVersion) RecordVersion {
	v.Status = "quarantined"
	return v
}

func gained(id string, epoch uint64, p *coordination.SplitProgress) coordination.Gained {
	return coordination.Gained{Split: coordination.SplitSpec{ID: coordination.SplitID(id), Weight: 1}, Epoch: coordination.LeaseEpoch(epoch), Progress: p}
}

func TestCheckerWrites(t *testing.T) {
	seed := sv(1, 0, "", 0)
	claimA := sv(2, 1, "a", 0)
	fenceA := pv(3, 1, "a", nil)
	tests := []struct {
		name     string
		versions []RecordVersion
		want     string // substring of a violation; "" for none
	}{
		{"legal life of a split", []RecordVersion{
			seed, claimA, fenceA, pv(4, 1, "a", wm(5)), sv(5, 1, "", 0), // hand-back
			sv(6, 2, "b", 0), pv(7, 2, "b", wm(5)), pv(8, 2, "b", wm(9)), completed(pv(9, 2, "b", wm(9))), completed(sv(10, 2, "b", 0)),
		}, ""},
		{"legal fail and quarantine", []RecordVersion{
			seed, claimA, fenceA, sv(4, 1, "", 1), sv(5, 2, "b", 1), pv(6, 2, "b", nil), quarantined(sv(7, 3, "", 2)),
		}, ""},
		{"legal commit of the previous tenancy before the fence", []RecordVersion{
			seed, claimA, fenceA, sv(4, 2, "b", 1), pv(5, 1, "a", wm(3)), pv(6, 2, "b", wm(3)),
		}, ""},
		{"I1 watermark decreases", []RecordVersion{seed, claimA, fenceA, pv(4, 1, "a", wm(5)), pv(5, 1, "a", wm(4))}, "I1: split s: watermark decreased"},
		{"I1 watermark becomes null", []RecordVersion{seed, claimA, fenceA, pv(4, 1, "a", wm(5)), pv(5, 1, "a", nil)}, "I1: split s: watermark became null"},
		{"I2 commit under another owner", []RecordVersion{seed, claimA, fenceA, pv(4, 1, "b", wm(5))}, "I2: split s: progress written under another tenancy"},
		{"I2 commit under a new epoch", []RecordVersion{seed, claimA, fenceA, pv(4, 2, "a", wm(5))}, "I2: split s: progress written under another tenancy"},
		{"I2 fence without a claim", []RecordVersion{seed, claimA, fenceA, pv(4, 2, "b", nil)}, "I2: split s: progress fenced at epoch 2 by b with no claim naming it"},
		{"I2 first fence without a claim", []RecordVersion{seed, pv(2, 1, "a", nil)}, "I2: split s: progress fenced at epoch 1 by a with no claim naming it"},
		{"I3 epoch decreases", []RecordVersion{seed, claimA, sv(3, 0, "a", 0)}, "I3: split s: epoch decreased"},
		{"I3 progress epoch decreases", []RecordVersion{seed, claimA, sv(3, 2, "b", 0), fenceA, pv(4, 2, "b", nil), pv(5, 1, "a", nil)}, "I3: split s: epoch decreased"},
		{"I3 attempts decrease", []RecordVersion{seed, sv(2, 1, "a", 2), sv(3, 1, "a", 1)}, "I3: split s: attempts decreased"},
		{"I4 completed record written again", []RecordVersion{seed, claimA, completed(sv(3, 1, "a", 0)), completed(sv(4, 1, "a", 0))}, "I4: split s: terminal version"},
		{"I4 completed progress written again", []RecordVersion{seed, claimA, fenceA, completed(pv(4, 1, "a", wm(5))), completed(pv(5, 1, "a", wm(5)))}, "I4: split s: terminal version"},
		{"I4 quarantined record deleted", []RecordVersion{seed, quarantined(sv(2, 1, "", 1)), {Split: "s", Revision: 3, Deleted: true}}, "I4: split s: terminal version"},
		{"revisions out of order", []RecordVersion{seed, claimA, sv(2, 1, "a", 0)}, "revisions out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker()
			for _, v := range tt.versions {
				c.Write(v)
			}
			assertViolation(t, c.Violations(), tt.want)
		})
	}
}

func assertViolation(t *testing.T, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Fatalf("violations = %q, want none", got)
		}
		return
	}
	if len(got) == 0 {
		t.Fatalf("no violation, want one containing %q", want)
	}
	for _, v := range got {
		if strings.Contains(v, want) {
			return
		}
	}
	t.Fatalf("violations = %q, want one containing %q", got, want)
}

type memberEvent struct {
	member string
	ev     coordination.Event
}

func TestCheckerEvents(t *testing.T) {
	records := []RecordVersion{
		sv(1, 0, "", 0), sv(2, 1, "a", 0), pv(3, 1, "a", nil), pv(4, 1, "a", wm(7)), sv(5, 1, "", 0),
		sv(6, 2, "b", 0), pv(7, 2, "b", wm(7)),
	}
	p7 := &coordination.SplitProgress{Watermark: 7}
	tests := []struct {
		name   string
		events []memberEvent
		final  bool
		want   string
	}{
		{"legal move", []memberEvent{{"a", gained("s", 1, nil)}, {"a", coordination.Lost{Split: "s"}}, {"b", gained("s", 2, p7)}}, true, ""},
		{"I5 epoch gained twice", []memberEvent{{"a", gained("s", 1, nil)}, {"b", gained("s", 1, nil)}}, true, "I5: split s: epoch 1 gained twice, by members a and b"},
		{"E2 epoch not increasing on a member", []memberEvent{{"b", gained("s", 2, p7)}, {"b", coordination.Lost{Split: "s"}}, {"b", gained("s", 1, nil)}}, true, "I5/E2: split s: member b gained epoch 1 after epoch 2"},
		{"E1 gained while held", []memberEvent{{"a", gained("s", 1, nil)}, {"a", gained("s", 2, p7)}}, true, "I5/E1: split s: member a gained epoch 2 while still holding epoch 1"},
		{"E1 lost without gained", []memberEvent{{"a", coordination.Lost{Split: "s"}}}, true, "I5/E1: split s: member a emitted Lost without holding it"},
		{"G4 gained progress differs from the committed cut", []memberEvent{{"b", gained("s", 2, &coordination.SplitProgress{Watermark: 5})}}, true, "I5/G4: split s: member b gained epoch 2 with progress"},
		{"gained with no claim version", []memberEvent{{"c", gained("s", 9, nil)}}, true, "I5: split s: member c gained epoch 9 but no record version names it"},
		{"E5 quarantined twice", []memberEvent{{"a", coordination.Quarantined{Split: "s", Attempts: 2}}, {"a", coordination.Quarantined{Split: "s", Attempts: 2}}}, true, "E5: split s: member a emitted Quarantined twice"},
		{"E6 revoke for a split not held", []memberEvent{{"a", coordination.RevokeRequested{Split: "s"}}}, true, "E6: split s: member a emitted RevokeRequested without holding it"},
		{"E7 event after the verdict", []memberEvent{{"a", coordination.AllComplete{}}, {"a", coordination.Quarantined{Split: "s", Attempts: 1}}}, true, "E7: member a emitted"},
		{"gained with no claim version yet is pending", []memberEvent{{"c", gained("s", 9, nil)}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker()
			for _, v := range records {
				c.Write(v)
			}
			for _, e := range tt.events {
				c.Event(e.member, e.ev)
			}
			c.Check(tt.final)
			assertViolation(t, c.Violations(), tt.want)
		})
	}
}

func TestCheckerSurrenderAllowsRegain(t *testing.T) {
	c := NewChecker()
	for _, v := range []RecordVersion{sv(1, 0, "", 0), sv(2, 1, "a", 0), pv(3, 1, "a", nil), sv(4, 1, "", 0), sv(5, 2, "a", 0), pv(6, 2, "a", nil)} {
		c.Write(v)
	}
	c.Event("a", gained("s", 1, nil))
	c.Surrendered("a", "s")
	c.Event("a", gained("s", 2, nil))
	c.Check(true)
	assertViolation(t, c.Violations(), "")
}

func TestCheckerVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		verdicts map[string]coordination.Event
		want     string
	}{
		{"all complete", map[string]coordination.Event{"a": coordination.AllComplete{}, "b": coordination.AllComplete{}}, ""},
		{"same stall", map[string]coordination.Event{"a": coordination.Stalled{Completed: 2, Quarantined: 1}, "b": coordination.Stalled{Completed: 2, Quarantined: 1}}, ""},
		{"I6 missing verdict", map[string]coordination.Event{"a": coordination.AllComplete{}, "b": nil}, "I6: member b is alive at the end of the run but received no verdict"},
		{"I6 different verdicts", map[string]coordination.Event{"a": coordination.AllComplete{}, "b": coordination.Stalled{Completed: 2, Quarantined: 1}}, "I6: members a and b received different verdicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker()
			c.CheckVerdicts(tt.verdicts)
			assertViolation(t, c.Violations(), tt.want)
		})
	}
}
