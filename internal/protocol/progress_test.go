package protocol

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

func TestSeedProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed coordination.SplitProgress
		want ProgressRecord
	}{
		{"seed with state", coordination.SplitProgress{Watermark: 5, State: []byte("x")},
			ProgressRecord{ID: "s", FP: 7, Watermark: i64(5), State: []byte("x"), WrittenAtMs: 9}},
		{"seed empty state stored as empty", coordination.SplitProgress{Watermark: -1},
			ProgressRecord{ID: "s", FP: 7, Watermark: i64(-1), State: []byte{}, WrittenAtMs: 9}},
		{"completed seed", coordination.SplitProgress{Watermark: 100, State: []byte{}, Completed: true},
			ProgressRecord{ID: "s", FP: 7, Watermark: i64(100), State: []byte{}, Completed: true, WrittenAtMs: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SeedProgress("s", 7, tc.seed, 9)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
			if len(tc.seed.State) > 0 && &got.State[0] == &tc.seed.State[0] {
				t.Fatal("state aliases the seed")
			}
			if p := got.Progress(); p == nil || p.Watermark != tc.seed.Watermark || p.Completed != tc.seed.Completed {
				t.Fatalf("Progress() = %#v, want the seed %#v", p, tc.seed)
			}
		})
	}
}

func TestFreshProgress(t *testing.T) {
	got := FreshProgress("s", 7, "w1", 3, 9)
	want := ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", WrittenAtMs: 9}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	if got.Progress() != nil {
		t.Fatalf("a fresh record carries progress %#v; Gained must carry none", got.Progress())
	}
}

// TestProgressTransitions has one row per progress-record write of the
// "Writes" table of docs/protocol.md: the fence names the tenancy and keeps
// the progress; a commit keeps the tenancy and replaces the progress.
func TestProgressTransitions(t *testing.T) {
	committed := ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Watermark: i64(10), State: []byte("st"), WrittenAtMs: 1}
	for _, tc := range []struct {
		name string
		got  ProgressRecord
		want ProgressRecord
	}{
		{"fence keeps the progress", committed.Fence("w2", 4, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 4, Owner: "w2", Watermark: i64(10), State: []byte("st"), WrittenAtMs: 5}},
		{"fence of a seed", SeedProgress("s", 7, coordination.SplitProgress{Watermark: 2}, 1).Fence("w2", 1, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 1, Owner: "w2", Watermark: i64(2), State: []byte{}, WrittenAtMs: 5}},
		{"fence of a fresh record", FreshProgress("s", 7, "w1", 1, 1).Fence("w1", 2, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 2, Owner: "w1", WrittenAtMs: 5}},
		{"commit", committed.Commit(coordination.SplitProgress{Watermark: 20, State: []byte("n")}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Watermark: i64(20), State: []byte("n"), WrittenAtMs: 5}},
		{"commit empty state is never null", committed.Commit(coordination.SplitProgress{Watermark: 20}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Watermark: i64(20), State: []byte{}, WrittenAtMs: 5}},
		{"commit completed", committed.Commit(coordination.SplitProgress{Watermark: 30, Completed: true}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Watermark: i64(30), State: []byte{}, Completed: true, WrittenAtMs: 5}},
		{"first commit of a fresh record", FreshProgress("s", 7, "w1", 1, 1).Commit(coordination.SplitProgress{Watermark: 1, State: []byte("a")}, 5),
			ProgressRecord{ID: "s", FP: 7, Epoch: 1, Owner: "w1", Watermark: i64(1), State: []byte("a"), WrittenAtMs: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Fatalf("\n got: %#v\nwant: %#v", tc.got, tc.want)
			}
		})
	}
	state := []byte("abc")
	c := committed.Commit(coordination.SplitProgress{Watermark: 1, State: state}, 5)
	state[0] = 'X'
	if string(c.State) != "abc" {
		t.Fatalf("commit aliases the caller's state: %q", c.State)
	}
	if committed.Owner != "w1" || committed.Epoch != 3 || *committed.Watermark != 10 || string(committed.State) != "st" {
		t.Fatalf("a transition changed its receiver: %#v", committed)
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
		{"state and completed", ProgressRecord{Watermark: i64(3), State: []byte("x"), Completed: true},
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
	base := ProgressRecord{ID: "s", FP: 7, Epoch: 3, Owner: "w1", Watermark: i64(10), State: []byte("st"), WrittenAtMs: 1}
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
		{"other written_at", mod(func(r *ProgressRecord) { r.WrittenAtMs = 99 }), true},
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

// TestProgressTransitionsProperty applies random fences (at a higher epoch,
// as claimants do) and commits to a progress record and checks the split of
// duties: a fence changes only epoch and owner, a commit only the progress
// fields; the epoch never decreases and every record round-trips.
func TestProgressTransitionsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r ProgressRecord
		if rapid.Bool().Draw(t, "seeded") {
			r = SeedProgress("s", testFP, genSplitProgress().Draw(t, "seed"), 0)
		} else {
			r = FreshProgress("s", testFP, genName().Draw(t, "owner"), rapid.Uint64Range(1, 5).Draw(t, "epoch"), 0)
		}
		steps := rapid.IntRange(0, 30).Draw(t, "steps")
		for i := 0; i < steps && !r.Completed; i++ {
			prev := r
			now := int64(i + 1)
			if rapid.Bool().Draw(t, "fence") {
				owner := genName().Draw(t, "owner")
				epoch := prev.Epoch + rapid.Uint64Range(1, 3).Draw(t, "by")
				r = r.Fence(owner, epoch, now)
				if r.Epoch != epoch || r.Owner != owner || r.WrittenAtMs != now || !prev.sameCommit(r) {
					t.Fatalf("fence: %#v -> %#v", prev, r)
				}
			} else {
				p := genSplitProgress().Draw(t, "progress")
				r = r.Commit(p, now)
				if r.Epoch != prev.Epoch || r.Owner != prev.Owner || r.WrittenAtMs != now || r.State == nil ||
					!reflect.DeepEqual(r.Progress(), normal(p)) {
					t.Fatalf("commit of %#v: %#v -> %#v", p, prev, r)
				}
			}
			if r.Epoch < prev.Epoch {
				t.Fatalf("epoch decreased: %#v -> %#v", prev, r)
			}
			back, err := DecodeProgress(ProgressKey(r.ID), EncodeProgress(r), testFP)
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Fatalf("record does not round-trip (%v): %#v", err, r)
			}
		}
	})
}

// sameCommit reports whether r and o hold the same committed progress
// fields, ignoring the tenancy.
func (r ProgressRecord) sameCommit(o ProgressRecord) bool {
	return reflect.DeepEqual(r.Watermark, o.Watermark) && reflect.DeepEqual(r.State, o.State) && r.Completed == o.Completed
}

// normal returns p as Progress reads it back: an empty state is nil.
func normal(p coordination.SplitProgress) *coordination.SplitProgress {
	if len(p.State) == 0 {
		p.State = nil
	}
	return &p
}

// TestTenanciesProperty runs the claim, fence and commit writes of
// docs/protocol.md ("Claim protocol", "Commits") against a model store in
// which every write is a CAS at the revision the writer last observed, with
// tenancies old and new racing, and checks the invariants: a commit lands
// only while the progress record's epoch is its tenancy's, committed progress
// never regresses, epochs never decrease, the progress epoch never passes the
// split record's, and Gained carries exactly what was committed before it.
func TestTenanciesProperty(t *testing.T) {
	type tenancy struct {
		owner   string
		epoch   uint64
		fenced  bool   // Gained happened
		progRev uint64 // revision of this tenancy's last progress write or read
		ended   bool
	}
	rapid.Check(t, func(t *rapid.T) {
		split := SeedSplit("s", testFP, 1, nil, 0)
		var prog *ProgressRecord
		var progRev uint64
		if rapid.Bool().Draw(t, "seeded") {
			p := SeedProgress("s", testFP, coordination.SplitProgress{Watermark: rapid.Int64Range(-5, 5).Draw(t, "seed")}, 0)
			prog, progRev = &p, 1
		}
		var ts []*tenancy
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for i := 0; i < steps && split.Status == StatusRunnable; i++ {
			now := int64(i + 1)
			prevSplit, prevProg := split, prog
			switch rapid.SampledFrom([]string{"claim", "fence", "commit", "handback"}).Draw(t, "op") {
			case "claim":
				// Any claim kind: a peer or a restarted process takes over, a
				// possibly still running previous tenancy is not told.
				owner := fmt.Sprintf("w%d", len(ts))
				e := split.Epoch + 1
				split = split.Claim(owner, "n"+owner, e, rapid.Bool().Draw(t, "charge"), now)
				ts = append(ts, &tenancy{owner: owner, epoch: e})
			case "fence":
				var pending []*tenancy
				for _, tn := range ts {
					if !tn.fenced && !tn.ended {
						pending = append(pending, tn)
					}
				}
				if len(pending) == 0 {
					continue
				}
				tn := rapid.SampledFrom(pending).Draw(t, "fencer")
				var before *coordination.SplitProgress
				switch {
				case prog == nil:
					p := FreshProgress("s", testFP, tn.owner, tn.epoch, now)
					prog, progRev = &p, progRev+1
				case prog.Epoch >= tn.epoch:
					tn.ended = true // a later claim superseded this one
					continue
				case prog.Completed:
					if tn.epoch == split.Epoch {
						split = split.Complete(now)
					}
					tn.ended = true
					continue
				default:
					before = prog.Progress()
					p := prog.Fence(tn.owner, tn.epoch, now)
					prog, progRev = &p, progRev+1
				}
				tn.fenced, tn.progRev = true, progRev
				if got := prog.Progress(); !reflect.DeepEqual(got, before) {
					t.Fatalf("Gained carries %#v, but %#v was committed", got, before)
				}
			case "commit":
				var live []*tenancy
				for _, tn := range ts {
					if tn.fenced && !tn.ended {
						live = append(live, tn)
					}
				}
				if len(live) == 0 {
					continue
				}
				tn := rapid.SampledFrom(live).Draw(t, "committer")
				p := coordination.SplitProgress{
					Watermark: rapid.Int64Range(-5, 20).Draw(t, "watermark"),
					Completed: rapid.IntRange(0, 9).Draw(t, "completed") == 0,
				}
				if tn.progRev != progRev {
					// The CAS at this tenancy's last revision loses: a later
					// tenancy fenced it.
					if prog.Epoch <= tn.epoch {
						t.Fatalf("tenancy %d lost its CAS, but the progress epoch is %d", tn.epoch, prog.Epoch)
					}
					tn.ended = true
					continue
				}
				if prog.Watermark != nil && p.Watermark < *prog.Watermark {
					continue // refused before any write
				}
				if prog.Epoch != tn.epoch || prog.Owner != tn.owner {
					t.Fatalf("tenancy %s/%d lands a commit on progress fenced by %s/%d", tn.owner, tn.epoch, prog.Owner, prog.Epoch)
				}
				c := prog.Commit(p, now)
				prog, progRev = &c, progRev+1
				tn.progRev = progRev
				if p.Completed {
					tn.ended = true
					if tn.epoch == split.Epoch {
						split = split.Complete(now)
					}
				}
			case "handback":
				if len(ts) == 0 || split.Owner == "" {
					continue
				}
				ts[len(ts)-1].ended = true
				split = split.HandBack(now)
			}
			if split.Epoch < prevSplit.Epoch || split.Attempts < prevSplit.Attempts {
				t.Fatalf("split record counters decreased: %#v -> %#v", prevSplit, split)
			}
			if prog != nil && prevProg != nil {
				if prog.Epoch < prevProg.Epoch {
					t.Fatalf("progress epoch decreased: %d -> %d", prevProg.Epoch, prog.Epoch)
				}
				if prevProg.Watermark != nil && (prog.Watermark == nil || *prog.Watermark < *prevProg.Watermark) {
					t.Fatalf("committed progress regressed: %v -> %v", *prevProg.Watermark, prog.Watermark)
				}
				if prevProg.Completed && !reflect.DeepEqual(*prog, *prevProg) {
					t.Fatalf("a completed progress record was written again: %#v -> %#v", prevProg, prog)
				}
			}
			if prog != nil && prog.Epoch > split.Epoch {
				t.Fatalf("progress epoch %d passed the split record's %d", prog.Epoch, split.Epoch)
			}
		}
	})
}
