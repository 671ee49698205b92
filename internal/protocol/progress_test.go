package protocol

import (
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

func TestNewPlan(t *testing.T) {
	got := NewPlan("job:v1", 42)
	want := PlanRecord{Fingerprint: "job:v1", Generation: 0, Finality: coordination.PlanOpen, Planned: 0, PlannerState: nil, UpdatedAtMs: 42}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestSeedProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed *coordination.SplitProgress
		want ProgressRecord
	}{
		{"no seed", nil,
			ProgressRecord{ID: "s", FP: 7, Status: StatusRunnable, WrittenAtMs: 9}},
		{"seed with state", &coordination.SplitProgress{Watermark: 5, State: []byte("x")},
			ProgressRecord{ID: "s", FP: 7, Status: StatusRunnable, Watermark: i64(5), State: []byte("x"), WrittenAtMs: 9}},
		{"seed empty state stored as empty", &coordination.SplitProgress{Watermark: -1},
			ProgressRecord{ID: "s", FP: 7, Status: StatusRunnable, Watermark: i64(-1), State: []byte{}, WrittenAtMs: 9}},
		{"completed seed", &coordination.SplitProgress{Watermark: 100, State: []byte{}, Completed: true},
			ProgressRecord{ID: "s", FP: 7, Status: StatusCompleted, Watermark: i64(100), State: []byte{}, Completed: true, WrittenAtMs: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SeedProgress("s", 7, tc.seed, 9)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
			if tc.seed != nil && len(tc.seed.State) > 0 && &got.State[0] == &tc.seed.State[0] {
				t.Fatal("state aliases the seed")
			}
		})
	}
}

func TestNewSpecAndSpec(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       coordination.SplitSpec
		want     SpecRecord
		wantSpec coordination.SplitSpec
	}{
		{"weight 0 stored as 1, nil descriptor as empty",
			coordination.SplitSpec{ID: "s"},
			SpecRecord{ID: "s", FP: 7, Generation: 3, Weight: 1, Descriptor: []byte{}},
			coordination.SplitSpec{ID: "s", Weight: 1}},
		{"empty descriptor",
			coordination.SplitSpec{ID: "s", Descriptor: []byte{}, Weight: 2},
			SpecRecord{ID: "s", FP: 7, Generation: 3, Weight: 2, Descriptor: []byte{}},
			coordination.SplitSpec{ID: "s", Weight: 2}},
		{"descriptor kept",
			coordination.SplitSpec{ID: "s", Descriptor: []byte("d"), Weight: math.MaxUint64},
			SpecRecord{ID: "s", FP: 7, Generation: 3, Weight: math.MaxUint64, Descriptor: []byte("d")},
			coordination.SplitSpec{ID: "s", Descriptor: []byte("d"), Weight: math.MaxUint64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewSpec(tc.in, 7, 3)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("NewSpec = %#v, want %#v", got, tc.want)
			}
			if sp := got.Spec(); !reflect.DeepEqual(sp, tc.wantSpec) {
				t.Fatalf("Spec = %#v, want %#v", sp, tc.wantSpec)
			}
		})
	}
	if sp := (SpecRecord{ID: "s", Weight: 0}).Spec(); sp.Weight != 1 {
		t.Fatalf("Spec of weight 0 = %d, want 1", sp.Weight)
	}
}

// TestTransitions has one row per write of the SPEC §9.5 table (and the
// variants the table's cells distinguish).
func TestTransitions(t *testing.T) {
	owned := ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusRunnable, Owner: "w1", Attempts: 1,
		Watermark: i64(10), State: []byte("st"), WrittenAtMs: 1}
	handed := owned
	handed.Owner = ""
	for _, tc := range []struct {
		name string
		got  ProgressRecord
		want ProgressRecord
	}{
		{"claim not charging", handed.Claim("w2", 4, false, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 4, Status: StatusRunnable, Owner: "w2", Attempts: 1, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"claim charging", owned.Claim("w2", 4, true, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 4, Status: StatusRunnable, Owner: "w2", Attempts: 2, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"claim of fresh", SeedProgress("s", 7, nil, 1).Claim("w2", 1, false, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 1, Status: StatusRunnable, Owner: "w2", WrittenAtMs: 5}},
		{"commit", owned.Commit(coordination.SplitProgress{Watermark: 20, State: []byte("n")}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusRunnable, Owner: "w1", Attempts: 1, Watermark: i64(20), State: []byte("n"), WrittenAtMs: 5}},
		{"commit empty state is never null", owned.Commit(coordination.SplitProgress{Watermark: 20}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusRunnable, Owner: "w1", Attempts: 1, Watermark: i64(20), State: []byte{}, WrittenAtMs: 5}},
		{"commit completed", owned.Commit(coordination.SplitProgress{Watermark: 30, Completed: true}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusCompleted, Owner: "w1", Attempts: 1, Watermark: i64(30), State: []byte{}, Completed: true, WrittenAtMs: 5}},
		{"hand-back", owned.HandBack(5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusRunnable, Attempts: 1, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"fail below cap", owned.Fail(4, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Status: StatusRunnable, Attempts: 2, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"fail at cap", owned.Fail(2, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 4, Status: StatusQuarantined, Attempts: 2, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"fail max attempts 1", SeedProgress("s", 7, nil, 1).Claim("w1", 1, false, 2).Fail(1, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 2, Status: StatusQuarantined, Attempts: 1, WrittenAtMs: 5}},
		{"quarantine on takeover", owned.QuarantineOnTakeover(5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 4, Status: StatusQuarantined, Attempts: 2, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"quarantine saturates", ProgressRecord{ID: "s", Epoch: math.MaxUint64, Attempts: math.MaxUint32, Owner: "w"}.QuarantineOnTakeover(5),
			ProgressRecord{ID: "s", Epoch: math.MaxUint64, Status: StatusQuarantined, Attempts: math.MaxUint32, WrittenAtMs: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Fatalf("\n got: %#v\nwant: %#v", tc.got, tc.want)
			}
		})
	}
	if owned.Owner != "w1" || owned.Epoch != 3 || string(owned.State) != "st" {
		t.Fatalf("a transition changed its receiver: %#v", owned)
	}
}

func TestProgressAccessor(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    ProgressRecord
		want *coordination.SplitProgress
	}{
		{"null watermark", ProgressRecord{}, nil},
		{"empty state is nil", ProgressRecord{Watermark: i64(3), State: []byte{}}, &coordination.SplitProgress{Watermark: 3}},
		{"state and completed", ProgressRecord{Watermark: i64(3), State: []byte("x"), Completed: true, Status: StatusCompleted},
			&coordination.SplitProgress{Watermark: 3, State: []byte("x"), Completed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Progress(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestSameProgress(t *testing.T) {
	base := ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Attempts: 1, Watermark: i64(10), State: []byte("st"), WrittenAtMs: 1}
	mod := func(f func(*ProgressRecord)) ProgressRecord {
		r := base
		r.Watermark = i64(*base.Watermark)
		r.State = append([]byte{}, base.State...)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		o    ProgressRecord
		same bool
	}{
		{"equal copy", mod(func(*ProgressRecord) {}), true},
		{"other written_at and attempts", mod(func(r *ProgressRecord) { r.WrittenAtMs = 99; r.Attempts = 3 }), true},
		{"other owner", mod(func(r *ProgressRecord) { r.Owner = "w2" }), false},
		{"owner null", mod(func(r *ProgressRecord) { r.Owner = "" }), false},
		{"other epoch", mod(func(r *ProgressRecord) { r.Epoch = 4 }), false},
		{"other watermark", mod(func(r *ProgressRecord) { r.Watermark = i64(11) }), false},
		{"null watermark", mod(func(r *ProgressRecord) { r.Watermark = nil }), false},
		{"other state", mod(func(r *ProgressRecord) { r.State = []byte("sx") }), false},
		{"null state", mod(func(r *ProgressRecord) { r.State = nil }), false},
		{"completed", mod(func(r *ProgressRecord) { r.Completed = true }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := base.SameProgress(tc.o); got != tc.same {
				t.Fatalf("SameProgress = %v, want %v", got, tc.same)
			}
			if got := tc.o.SameProgress(base); got != tc.same {
				t.Fatalf("SameProgress is not symmetric")
			}
		})
	}
}

// TestTransitionsProperty applies random sequences of §9.5 writes, as callers
// do (never to a terminal record; claims at the observed epoch + 1), and
// checks that epochs and attempts never decrease, that every record stays
// encodable and decodes to itself, that completed holds iff the status is
// completed, and that each write changes exactly the fields its row allows.
func TestTransitionsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxAttempts := rapid.Uint32Range(1, 6).Draw(t, "max_attempts")
		var seed *coordination.SplitProgress
		if rapid.Bool().Draw(t, "seeded") {
			p := genSplitProgress().Draw(t, "seed")
			seed = &p
		}
		r := SeedProgress("s", testFP, seed, 0)
		steps := rapid.IntRange(0, 30).Draw(t, "steps")
		for i := 0; i < steps && !r.Status.Terminal(); i++ {
			prev := r
			now := int64(i + 1)
			op := rapid.SampledFrom([]string{"claim", "commit", "handback", "fail", "quarantine"}).Draw(t, "op")
			switch op {
			case "claim":
				charge := rapid.Bool().Draw(t, "charge")
				r = r.Claim(genName().Draw(t, "owner"), r.Epoch+1, charge, now)
				if r.Epoch != prev.Epoch+1 || r.Status != prev.Status || (r.Attempts == prev.Attempts) == charge {
					t.Fatalf("claim: %#v -> %#v", prev, r)
				}
			case "commit":
				p := genSplitProgress().Draw(t, "progress")
				r = r.Commit(p, now)
				if r.Epoch != prev.Epoch || r.Owner != prev.Owner || r.Attempts != prev.Attempts || r.State == nil ||
					(r.Status == StatusCompleted) != p.Completed {
					t.Fatalf("commit: %#v -> %#v", prev, r)
				}
			case "handback":
				r = r.HandBack(now)
				want := prev
				want.Owner, want.WrittenAtMs = "", now
				if !reflect.DeepEqual(r, want) {
					t.Fatalf("hand-back: %#v -> %#v", prev, r)
				}
			case "fail":
				r = r.Fail(maxAttempts, now)
				atCap := prev.Attempts+1 >= maxAttempts
				if r.Owner != "" || r.Attempts != prev.Attempts+1 || (r.Status == StatusQuarantined) != atCap ||
					(r.Epoch == prev.Epoch+1) != atCap {
					t.Fatalf("fail: %#v -> %#v", prev, r)
				}
			case "quarantine":
				r = r.QuarantineOnTakeover(now)
				if r.Owner != "" || r.Attempts != prev.Attempts+1 || r.Status != StatusQuarantined || r.Epoch != prev.Epoch+1 {
					t.Fatalf("quarantine: %#v -> %#v", prev, r)
				}
			}
			if r.Epoch < prev.Epoch || r.Attempts < prev.Attempts {
				t.Fatalf("%s decreased a counter: %#v -> %#v", op, prev, r)
			}
			if r.Completed != (r.Status == StatusCompleted) {
				t.Fatalf("%s broke completed iff status completed: %#v", op, r)
			}
			back, err := DecodeProgress(SplitKey(r.ID), EncodeProgress(r), testFP)
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Fatalf("%s: record does not round-trip (%v): %#v", op, err, r)
			}
		}
	})
}
