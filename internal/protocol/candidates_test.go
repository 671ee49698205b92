package protocol

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// rec builds a runnable split record of split "s" with owner (and its
// session nonce), epoch and attempts.
func rec(owner, nonce string, epoch uint64, attempts uint32) SplitRecord {
	return SplitRecord{ID: "s", FP: testFP, Epoch: epoch, Status: StatusRunnable, Owner: owner, Nonce: nonce, Attempts: attempts}
}

// TestClassify has a group of rows per row of the "Claim candidates" table
// of docs/protocol.md, then the rules below it: the attempts gate, the spec
// requirement, and what is never a candidate. This worker is "me" with
// session "mine"; MaxAttempts is 4 unless given.
func TestClassify(t *testing.T) {
	completed := rec("w", "n", 3, 0).Complete(0)
	quarantined := rec("", "", 3, 4).QuarantineOnTakeover(0)
	for _, tc := range []struct {
		name     string
		record   SplitRecord
		session  string // the owner's live session nonce in the view; "" none
		held     bool
		max      uint32 // 0 means 4
		ok       bool
		kind     ClaimKind
		quar     bool
		confirm  bool
		leftover bool
	}{
		// Row: owner null, epoch 0 -> Create, no attempt.
		{name: "fresh is create", record: rec("", "", 0, 0), ok: true, kind: KindCreate},
		{name: "fresh at cap is create, never quarantined", record: rec("", "", 0, 9), ok: true, kind: KindCreate},
		// Row: owner null, epoch > 0 -> Released (handed back), no attempt.
		{name: "handed back is released", record: rec("", "", 2, 1), ok: true, kind: KindReleased},
		{name: "handed back at cap is released, never quarantined", record: rec("", "", 2, 3), ok: true, kind: KindReleased},
		// Row: owner = me, nonce = my session -> Released (leftover), no attempt.
		{name: "own leftover", record: rec("me", "mine", 2, 0), session: "mine", ok: true, kind: KindReleased, leftover: true},
		{name: "own leftover without presence in view", record: rec("me", "mine", 2, 0), ok: true, kind: KindReleased, leftover: true},
		{name: "own leftover at cap is not quarantined", record: rec("me", "mine", 2, 3), session: "mine", ok: true, kind: KindReleased, leftover: true},
		{name: "own leftover", record: rec("me", "mine", 2, 0), session: "mine", ok: true, kind: KindReleased, leftover: true},
		// Row: owner = me, other nonce, that session ended -> Reclaim, +1 attempt, confirm first.
		{name: "earlier session of my id is reclaim", record: rec("me", "old", 2, 0), session: "mine", ok: true, kind: KindReclaim, confirm: true},
		{name: "reclaim without presence in view", record: rec("me", "old", 2, 0), ok: true, kind: KindReclaim, confirm: true},
		{name: "reclaim below cap", record: rec("me", "old", 2, 2), session: "mine", ok: true, kind: KindReclaim, confirm: true},
		{name: "reclaim at cap quarantines", record: rec("me", "old", 2, 3), session: "mine", ok: true, kind: KindReclaim, quar: true, confirm: true},
		{name: "reclaim quarantine", record: rec("me", "old", 2, 3), ok: true, kind: KindReclaim, quar: true, confirm: true},
		// Row: owner = me, other nonce live on my presence key (a live twin's) -> not a candidate.
		{name: "a live twin's session", record: rec("me", "twin", 2, 0), session: "twin"},
		{name: "a live twin's session at cap", record: rec("me", "twin", 2, 3), session: "twin"},
		// Row: owner = other, that owner's live session has the record's nonce -> not a candidate.
		{name: "peer's live session", record: rec("peer", "theirs", 2, 0), session: "theirs"},
		{name: "peer's live session at cap", record: rec("peer", "theirs", 2, 3), session: "theirs"},
		{name: "peer's live session with my nonce", record: rec("peer", "mine", 2, 0), session: "mine"},
		{name: "peer's live session at epoch 0", record: rec("peer", "theirs", 0, 0), session: "theirs"},
		// Row: owner = other, session ended -> Expired, +1 attempt, confirm first.
		{name: "peer without presence is expired", record: rec("peer", "theirs", 2, 0), ok: true, kind: KindExpired, confirm: true},
		{name: "peer's presence with another nonce is expired", record: rec("peer", "theirs", 2, 0), session: "newer", ok: true, kind: KindExpired, confirm: true},
		{name: "peer's presence with my nonce is expired", record: rec("peer", "theirs", 2, 0), session: "mine", ok: true, kind: KindExpired, confirm: true},
		{name: "expired below cap", record: rec("peer", "theirs", 2, 2), ok: true, kind: KindExpired, confirm: true},
		{name: "expired at cap quarantines after confirming", record: rec("peer", "theirs", 2, 3), ok: true, kind: KindExpired, quar: true, confirm: true},
		{name: "expired over cap", record: rec("peer", "theirs", 2, 9), ok: true, kind: KindExpired, quar: true, confirm: true},
		{name: "expired max attempts 1", record: rec("peer", "theirs", 2, 0), max: 1, ok: true, kind: KindExpired, quar: true, confirm: true},
		{name: "expired attempts saturated", record: rec("peer", "theirs", 2, math.MaxUint32), max: math.MaxUint32, ok: true, kind: KindExpired, quar: true, confirm: true},
		// Held here or terminal: never a candidate.
		{name: "held", record: rec("me", "mine", 2, 0), session: "mine", held: true},
		{name: "held reclaim at cap", record: rec("me", "old", 2, 3), held: true},
		{name: "held fresh", record: rec("", "", 0, 0), held: true},
		{name: "completed", record: completed},
		{name: "completed by an ended session", record: rec("peer", "theirs", 2, 3).Complete(0)},
		{name: "completed leftover", record: rec("me", "mine", 2, 0).Complete(0), session: "mine"},
		{name: "quarantined", record: quarantined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 4
			}
			c, ok := Classify(CandidateInput{Record: tc.record, OwnerSession: tc.session, Held: tc.held,
				Me: "me", MyNonce: "mine", MaxAttempts: max})
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (candidate %+v)", ok, tc.ok, c)
			}
			if !ok {
				if c != (Candidate{}) {
					t.Fatalf("not a candidate but returned %+v", c)
				}
				return
			}
			want := Candidate{ID: "s", Kind: tc.kind, Quarantine: tc.quar, Confirm: tc.confirm, Leftover: tc.leftover}
			if c != want {
				t.Fatalf("got %+v, want %+v", c, want)
			}
		})
	}
}

func TestClaimKindLabels(t *testing.T) {
	for _, tc := range []struct {
		kind     ClaimKind
		name     string
		reason   string
		consumes bool
	}{
		{KindCreate, "create", "create", false},
		{KindReleased, "released", "reassigned", false},
		{KindReclaim, "reclaim", "reclaimed", true},
		{KindExpired, "expired", "expired", true},
		{ClaimKind(0), "unknown", "unknown", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.kind.String(); got != tc.name {
				t.Errorf("String = %q, want %q", got, tc.name)
			}
			if got := tc.kind.AcquisitionReason(); got != tc.reason {
				t.Errorf("AcquisitionReason = %q, want %q", got, tc.reason)
			}
			if got := tc.kind.ConsumesAttempt(); got != tc.consumes {
				t.Errorf("ConsumesAttempt = %v, want %v", got, tc.consumes)
			}
		})
	}
}

func TestCandidateLess(t *testing.T) {
	got := []Candidate{
		{ID: "a", Kind: KindExpired},
		{ID: "b", Kind: KindReclaim},
		{ID: "z", Kind: KindCreate},
		{ID: "c", Kind: KindReleased},
		{ID: "a", Kind: KindCreate},
		{ID: "b", Kind: KindExpired, Quarantine: true},
	}
	slices.SortFunc(got, func(a, b Candidate) int {
		switch {
		case CandidateLess(a, b):
			return -1
		case CandidateLess(b, a):
			return 1
		}
		return 0
	})
	want := []coordination.SplitID{"a", "z", "c", "b", "a", "b"}
	wantKinds := []ClaimKind{KindCreate, KindCreate, KindReleased, KindReclaim, KindExpired, KindExpired}
	for i := range got {
		if got[i].ID != want[i] || got[i].Kind != wantKinds[i] {
			t.Fatalf("order %v, want ids %v kinds %v", got, want, wantKinds)
		}
	}
}

// candidateRow is one row of the "Claim candidates" table of
// docs/protocol.md, written as its columns read.
type candidateRow struct {
	name      string
	match     func(in CandidateInput) bool
	candidate bool
	kind      ClaimKind
	attempt   bool // the "attempt" column is +1
	leftover  bool
	confirm   bool
}

// candidateTable is the table, row by row, independent of Classify.
func candidateTable() []candidateRow {
	other := func(in CandidateInput) bool { return in.Record.Owner != "" && in.Record.Owner != in.Me }
	return []candidateRow{
		{name: "owner null, epoch 0", candidate: true, kind: KindCreate,
			match: func(in CandidateInput) bool { return in.Record.Owner == "" && in.Record.Epoch == 0 }},
		{name: "owner null, epoch > 0", candidate: true, kind: KindReleased,
			match: func(in CandidateInput) bool { return in.Record.Owner == "" && in.Record.Epoch > 0 }},
		{name: "owner = me, nonce = my session", candidate: true, kind: KindReleased, leftover: true,
			match: func(in CandidateInput) bool { return in.Record.Owner == in.Me && in.Record.Nonce == in.MyNonce }},
		{name: "owner = me, other nonce, that session ended", candidate: true, kind: KindReclaim, attempt: true, confirm: true,
			match: func(in CandidateInput) bool {
				return in.Record.Owner == in.Me && in.Record.Nonce != in.MyNonce && in.OwnerSession != in.Record.Nonce
			}},
		{name: "owner = me, other nonce live on my presence key (a twin's)",
			match: func(in CandidateInput) bool {
				return in.Record.Owner == in.Me && in.Record.Nonce != in.MyNonce && in.OwnerSession == in.Record.Nonce
			}},
		{name: "owner = other, live session with the same nonce",
			match: func(in CandidateInput) bool { return other(in) && in.OwnerSession == in.Record.Nonce }},
		{name: "owner = other, session ended", candidate: true, kind: KindExpired, attempt: true, confirm: true,
			match: func(in CandidateInput) bool { return other(in) && in.OwnerSession != in.Record.Nonce }},
	}
}

// TestClassifyProperty checks Classify against the model of the "Claim
// candidates" table and the rules below it on random views: exactly one row
// matches every valid record; a runnable split not held here is a candidate
// of that row's kind; an attempt-consuming kind at the cap is a quarantine
// candidate (no spec needed); any other candidate needs its spec, except a
// leftover, which is handed back if not claimed.
func TestClassifyProperty(t *testing.T) {
	table := candidateTable()
	rapid.Check(t, func(t *rapid.T) {
		in := genCandidateInput().Draw(t, "input")
		c, ok := Classify(in)
		r := in.Record

		var row *candidateRow
		for i := range table {
			if table[i].match(in) {
				if row != nil {
					t.Fatalf("rows %q and %q both match %+v", row.name, table[i].name, in)
				}
				row = &table[i]
			}
		}
		if row == nil {
			t.Fatalf("no row matches %+v", in)
		}
		quarantine := row.attempt && uint64(r.Attempts)+1 >= uint64(in.MaxAttempts)
		wantOK := r.Status == StatusRunnable && !in.Held && row.candidate
		if ok != wantOK {
			t.Fatalf("row %q: ok = %v, want %v (candidate %+v, input %+v)", row.name, ok, wantOK, c, in)
		}
		if !ok {
			if c != (Candidate{}) {
				t.Fatalf("not a candidate but returned %+v", c)
			}
			return
		}
		want := Candidate{ID: r.ID, Kind: row.kind, Quarantine: quarantine, Confirm: row.confirm, Leftover: row.leftover}
		if c != want {
			t.Fatalf("row %q: got %+v, want %+v", row.name, c, want)
		}
		// Safety, stated directly: a live session is never robbed, and
		// only a kind that consumes an attempt quarantines.
		if r.Owner != "" && r.Nonce != in.MyNonce && in.OwnerSession == r.Nonce {
			t.Fatalf("candidate %+v of %q's live session", c, r.Owner)
		}
		if c.Kind.ConsumesAttempt() != row.attempt || (c.Quarantine && !c.Kind.ConsumesAttempt()) {
			t.Fatalf("candidate %+v charges wrongly", c)
		}
		if c.Confirm != c.Kind.ConsumesAttempt() {
			t.Fatalf("candidate %+v: Confirm iff Reclaim or Expired", c)
		}
	})
}
