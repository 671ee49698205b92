package protocol

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

func TestSeedSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed *coordination.SplitProgress
		want SplitRecord
	}{
		{"no seed", nil, SplitRecord{ID: "s", FP: 7, Weight: 1, Status: StatusRunnable, WrittenAtMs: 9}},
		{"seed not completed", &coordination.SplitProgress{Watermark: 5, State: []byte("x")},
			SplitRecord{ID: "s", FP: 7, Weight: 1, Status: StatusRunnable, WrittenAtMs: 9}},
		{"completed seed", &coordination.SplitProgress{Watermark: 100, Completed: true},
			SplitRecord{ID: "s", FP: 7, Weight: 1, Status: StatusCompleted, WrittenAtMs: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SeedSplit("s", 7, 1, tc.seed, 9); got != tc.want {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestSplitTransitions has one row per split-record write of the "Writes"
// table of docs/protocol.md (and the variants its cells distinguish).
func TestSplitTransitions(t *testing.T) {
	owned := SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 3, Status: StatusRunnable, Owner: "w1", Nonce: "n1", Attempts: 1, WrittenAtMs: 1}
	handed := owned
	handed.Owner, handed.Nonce = "", ""
	for _, tc := range []struct {
		name string
		got  SplitRecord
		want SplitRecord
	}{
		{"claim not charging", handed.Claim("w2", "n2", 4, false, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 4, Status: StatusRunnable, Owner: "w2", Nonce: "n2", Attempts: 1, WrittenAtMs: 5}},
		{"claim charging", owned.Claim("w2", "n2", 4, true, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 4, Status: StatusRunnable, Owner: "w2", Nonce: "n2", Attempts: 2, WrittenAtMs: 5}},
		{"reclaim by a new session of the same id", owned.Claim("w1", "n3", 4, true, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 4, Status: StatusRunnable, Owner: "w1", Nonce: "n3", Attempts: 2, WrittenAtMs: 5}},
		{"claim of fresh", SeedSplit("s", 7, 1, nil, 1).Claim("w2", "n2", 1, false, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 1, Status: StatusRunnable, Owner: "w2", Nonce: "n2", WrittenAtMs: 5}},
		{"claim attempts saturate", SplitRecord{ID: "s", Attempts: math.MaxUint32}.Claim("w", "n", 1, true, 5),
			SplitRecord{ID: "s", Epoch: 1, Owner: "w", Nonce: "n", Attempts: math.MaxUint32, WrittenAtMs: 5}},
		{"hand-back", owned.HandBack(5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 3, Status: StatusRunnable, Attempts: 1, WrittenAtMs: 5}},
		{"complete keeps the last owner", owned.Complete(5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 3, Status: StatusCompleted, Owner: "w1", Nonce: "n1", Attempts: 1, WrittenAtMs: 5}},
		{"fail below cap", owned.Fail(4, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 3, Status: StatusRunnable, Attempts: 2, WrittenAtMs: 5}},
		{"fail at cap", owned.Fail(2, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 4, Status: StatusQuarantined, Attempts: 2, WrittenAtMs: 5}},
		{"fail over cap", SplitRecord{ID: "s", Epoch: 3, Owner: "w", Nonce: "n", Attempts: 7}.Fail(2, 5),
			SplitRecord{ID: "s", Epoch: 4, Status: StatusQuarantined, Attempts: 8, WrittenAtMs: 5}},
		{"fail max attempts 1", SeedSplit("s", 7, 1, nil, 1).Claim("w1", "n1", 1, false, 2).Fail(1, 5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 2, Status: StatusQuarantined, Attempts: 1, WrittenAtMs: 5}},
		{"fail saturates", SplitRecord{ID: "s", Epoch: math.MaxUint64, Attempts: math.MaxUint32, Owner: "w", Nonce: "n"}.Fail(math.MaxUint32, 5),
			SplitRecord{ID: "s", Epoch: math.MaxUint64, Status: StatusQuarantined, Attempts: math.MaxUint32, WrittenAtMs: 5}},
		{"quarantine on takeover", owned.QuarantineOnTakeover(5),
			SplitRecord{ID: "s", FP: 7, Weight: 1, Epoch: 4, Status: StatusQuarantined, Attempts: 2, WrittenAtMs: 5}},
		{"quarantine saturates", SplitRecord{ID: "s", Epoch: math.MaxUint64, Attempts: math.MaxUint32, Owner: "w", Nonce: "n"}.QuarantineOnTakeover(5),
			SplitRecord{ID: "s", Epoch: math.MaxUint64, Status: StatusQuarantined, Attempts: math.MaxUint32, WrittenAtMs: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("\n got: %#v\nwant: %#v", tc.got, tc.want)
			}
		})
	}
	if owned.Owner != "w1" || owned.Nonce != "n1" || owned.Epoch != 3 || owned.Attempts != 1 {
		t.Fatalf("a transition changed its receiver: %#v", owned)
	}
}

// TestSplitTransitionsProperty applies random sequences of split-record
// writes, as callers do (never to a terminal record; claims at the observed
// epoch + 1), and checks that epochs and attempts never decrease, that owner
// and nonce stay null together, that every record round-trips, and that each
// write changes exactly the fields its row of "Writes" allows.
func TestSplitTransitionsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxAttempts := rapid.Uint32Range(1, 6).Draw(t, "max_attempts")
		var seed *coordination.SplitProgress
		if rapid.Bool().Draw(t, "seeded") {
			p := genSplitProgress().Draw(t, "seed")
			seed = &p
		}
		r := SeedSplit("s", testFP, 1, seed, 0)
		if r.Epoch != 0 || r.Owner != "" || r.Attempts != 0 || r.Status.Terminal() != (seed != nil && seed.Completed) {
			t.Fatalf("seed %+v gave %#v", seed, r)
		}
		steps := rapid.IntRange(0, 30).Draw(t, "steps")
		for i := 0; i < steps && !r.Status.Terminal(); i++ {
			prev := r
			now := int64(i + 1)
			op := rapid.SampledFrom([]string{"claim", "handback", "complete", "fail", "quarantine"}).Draw(t, "op")
			want := prev
			want.WrittenAtMs = now
			switch op {
			case "claim":
				charge := rapid.Bool().Draw(t, "charge")
				owner, nonce := genName().Draw(t, "owner"), genName().Draw(t, "nonce")
				r = r.Claim(owner, nonce, r.Epoch+1, charge, now)
				want.Epoch, want.Owner, want.Nonce = prev.Epoch+1, owner, nonce
				if charge {
					want.Attempts = prev.Attempts + 1
				}
			case "handback":
				r = r.HandBack(now)
				want.Owner, want.Nonce = "", ""
			case "complete":
				r = r.Complete(now)
				want.Status = StatusCompleted
			case "fail":
				r = r.Fail(maxAttempts, now)
				want.Owner, want.Nonce, want.Attempts = "", "", prev.Attempts+1
				if want.Attempts >= maxAttempts {
					want.Status, want.Epoch = StatusQuarantined, prev.Epoch+1
				}
			case "quarantine":
				r = r.QuarantineOnTakeover(now)
				want.Owner, want.Nonce, want.Attempts = "", "", prev.Attempts+1
				want.Status, want.Epoch = StatusQuarantined, prev.Epoch+1
			}
			if r != want {
				t.Fatalf("%s: %#v\n got: %#v\nwant: %#v", op, prev, r, want)
			}
			if r.Epoch < prev.Epoch || r.Attempts < prev.Attempts {
				t.Fatalf("%s decreased a counter: %#v -> %#v", op, prev, r)
			}
			if (r.Owner == "") != (r.Nonce == "") {
				t.Fatalf("%s left owner and nonce apart: %#v", op, r)
			}
			back, err := DecodeSplit(SplitKey(r.ID), EncodeSplit(r), testFP)
			if err != nil || back != r {
				t.Fatalf("%s: record does not round-trip (%v): %#v", op, err, r)
			}
		}
	})
}
