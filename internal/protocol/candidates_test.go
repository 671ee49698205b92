package protocol

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// rec builds a runnable record of split "s" with owner, epoch and attempts.
func rec(owner string, epoch uint64, attempts uint32) ProgressRecord {
	return ProgressRecord{ID: "s", FP: testFP, Epoch: epoch, Status: StatusRunnable, Owner: owner, Attempts: attempts}
}

func TestClassify(t *testing.T) {
	mine := &LeaseRecord{Owner: "me", Nonce: "mine", Epoch: 3}
	pred := &LeaseRecord{Owner: "me", Nonce: "old", Epoch: 3}
	peer := &LeaseRecord{Owner: "peer", Nonce: "theirs", Epoch: 3}
	peerMyNonce := &LeaseRecord{Owner: "peer", Nonce: "mine", Epoch: 3}
	completed := rec("w", 3, 0)
	completed.Status, completed.Completed = StatusCompleted, true
	quarantined := rec("", 3, 4)
	quarantined.Status = StatusQuarantined
	for _, tc := range []struct {
		name     string
		record   ProgressRecord
		lease    *LeaseRecord
		held     bool
		noSpec   bool
		max      uint32 // 0 means 4
		ok       bool
		kind     ClaimKind
		quar     bool
		ownLease bool
	}{
		// §16.3 table, no lease.
		{name: "fresh is create", record: rec("", 0, 0), ok: true, kind: KindCreate},
		{name: "handed back is released", record: rec("", 2, 1), ok: true, kind: KindReleased},
		{name: "owner set is expired", record: rec("peer", 2, 0), ok: true, kind: KindExpired},
		{name: "own record owner without lease is expired", record: rec("me", 2, 0), ok: true, kind: KindExpired},
		// Own leftover lease: as if no lease, OwnLease set.
		{name: "leftover on fresh is create", record: rec("", 0, 0), lease: mine, ok: true, kind: KindCreate, ownLease: true},
		{name: "leftover on handed back is released", record: rec("", 2, 0), lease: mine, ok: true, kind: KindReleased, ownLease: true},
		{name: "leftover on owned is expired", record: rec("me", 2, 0), lease: mine, ok: true, kind: KindExpired, ownLease: true},
		{name: "leftover on expired at cap quarantines", record: rec("me", 2, 3), lease: mine, ok: true, kind: KindExpired, quar: true, ownLease: true},
		// Restarted predecessor's lease.
		{name: "own id other nonce is reclaim", record: rec("me", 2, 0), lease: pred, ok: true, kind: KindReclaim, ownLease: true},
		{name: "reclaim whatever the record", record: rec("", 0, 0), lease: pred, ok: true, kind: KindReclaim, ownLease: true},
		{name: "reclaim at cap quarantines", record: rec("me", 2, 3), lease: pred, ok: true, kind: KindReclaim, quar: true, ownLease: true},
		{name: "reclaim needs spec", record: rec("me", 2, 0), lease: pred, noSpec: true},
		{name: "reclaim quarantine needs no spec", record: rec("me", 2, 3), lease: pred, noSpec: true, ok: true, kind: KindReclaim, quar: true, ownLease: true},
		// Another owner's live lease.
		{name: "peer lease", record: rec("peer", 2, 0), lease: peer},
		{name: "peer lease on fresh", record: rec("", 0, 0), lease: peer},
		{name: "peer lease at cap", record: rec("peer", 2, 3), lease: peer},
		{name: "peer lease with my nonce", record: rec("peer", 2, 0), lease: peerMyNonce},
		// Attempts gate.
		{name: "expired below cap", record: rec("peer", 2, 2), ok: true, kind: KindExpired},
		{name: "expired at cap", record: rec("peer", 2, 3), ok: true, kind: KindExpired, quar: true},
		{name: "expired over cap", record: rec("peer", 2, 9), ok: true, kind: KindExpired, quar: true},
		{name: "expired max attempts 1", record: rec("peer", 2, 0), max: 1, ok: true, kind: KindExpired, quar: true},
		{name: "expired attempts saturated", record: rec("peer", 2, math.MaxUint32), max: math.MaxUint32, ok: true, kind: KindExpired, quar: true},
		{name: "create never quarantines", record: rec("", 0, 9), ok: true, kind: KindCreate},
		{name: "released never quarantines", record: rec("", 2, 3), ok: true, kind: KindReleased},
		{name: "expired quarantine needs no spec", record: rec("peer", 2, 3), noSpec: true, ok: true, kind: KindExpired, quar: true},
		// Spec requirement.
		{name: "create needs spec", record: rec("", 0, 0), noSpec: true},
		{name: "released needs spec", record: rec("", 2, 0), noSpec: true},
		{name: "expired needs spec", record: rec("peer", 2, 0), noSpec: true},
		// Not runnable or held.
		{name: "held", record: rec("me", 2, 0), lease: mine, held: true},
		{name: "held at cap", record: rec("me", 2, 3), held: true},
		{name: "completed", record: completed},
		{name: "quarantined", record: quarantined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 4
			}
			c, ok := Classify(CandidateInput{Record: tc.record, HasSpec: !tc.noSpec, Lease: tc.lease, Held: tc.held,
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
			want := Candidate{ID: "s", Kind: tc.kind, Quarantine: tc.quar, OwnLease: tc.ownLease}
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

// TestClassifyProperty checks that every candidate is safe and that Classify
// agrees with an independent reading of SPEC §16.3 on every input.
func TestClassifyProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genCandidateInput().Draw(t, "input")
		c, ok := Classify(in)
		r := in.Record

		// The model: the kind from the lease, else from the record.
		eligible := r.Status == StatusRunnable && !in.Held && (in.Lease == nil || in.Lease.Owner == in.Me)
		var kind ClaimKind
		switch {
		case in.Lease != nil && in.Lease.Owner == in.Me && in.Lease.Nonce != in.MyNonce:
			kind = KindReclaim
		case r.Owner != "":
			kind = KindExpired
		case r.Epoch == 0:
			kind = KindCreate
		default:
			kind = KindReleased
		}
		quarantine := (kind == KindReclaim || kind == KindExpired) && uint64(r.Attempts)+1 >= uint64(in.MaxAttempts)
		wantOK := eligible && (quarantine || in.HasSpec)
		if ok != wantOK {
			t.Fatalf("ok = %v, want %v (candidate %+v)", ok, wantOK, c)
		}
		if !ok {
			return
		}
		// Safety of every candidate returned.
		if r.Status != StatusRunnable {
			t.Fatalf("candidate with status %v", r.Status)
		}
		if in.Held {
			t.Fatal("candidate held here")
		}
		if in.Lease != nil && in.Lease.Owner != in.Me {
			t.Fatalf("candidate under %q's live lease", in.Lease.Owner)
		}
		if c.OwnLease != (in.Lease != nil && in.Lease.Owner == in.Me) {
			t.Fatalf("OwnLease = %v with lease %+v", c.OwnLease, in.Lease)
		}
		if c.Quarantine != (c.Kind.ConsumesAttempt() && uint64(r.Attempts)+1 >= uint64(in.MaxAttempts)) {
			t.Fatalf("Quarantine = %v for kind %v attempts %d max %d", c.Quarantine, c.Kind, r.Attempts, in.MaxAttempts)
		}
		if !c.Quarantine && !in.HasSpec {
			t.Fatal("claim candidate without its spec")
		}
		if c.Kind != kind || c.ID != r.ID {
			t.Fatalf("got %+v, want kind %v id %q", c, kind, r.ID)
		}
	})
}
