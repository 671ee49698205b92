package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// oldProgressWire and oldSplitWire are the records as they were before
// "Runtime split": a record with no cut must encode exactly as they did, so
// a worker of an earlier version reads it.
type oldProgressWire struct {
	Schema      int     `json:"schema"`
	ID          string  `json:"id"`
	FP          uint64  `json:"fp"`
	Epoch       uint64  `json:"epoch"`
	Owner       *string `json:"owner"`
	Watermark   *int64  `json:"watermark"`
	State       []byte  `json:"state"`
	Completed   bool    `json:"completed"`
	WrittenAtMs int64   `json:"written_at_ms"`
}

type oldSplitWire struct {
	Schema      int     `json:"schema"`
	ID          string  `json:"id"`
	FP          uint64  `json:"fp"`
	Weight      uint64  `json:"weight"`
	Epoch       uint64  `json:"epoch"`
	Status      string  `json:"status"`
	Owner       *string `json:"owner"`
	Nonce       *string `json:"nonce"`
	Attempts    uint32  `json:"attempts"`
	WrittenAtMs int64   `json:"written_at_ms"`
}

// TestUncutRecordsAreUnchanged: a progress record without a cut and a
// split record without a parent encode byte for byte as before the runtime
// split, so old and new workers read each other's records of uncut splits.
func TestUncutRecordsAreUnchanged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genProgress().Draw(t, "progress")
		p.Cut, p.Descriptor = nil, nil
		want, _ := json.Marshal(oldProgressWire{Schema, string(p.ID), p.FP, p.Epoch, nullable(p.Owner), p.Watermark, p.State, p.Completed, p.WrittenAtMs})
		if got := EncodeProgress(p); string(got) != string(want) {
			t.Fatalf("uncut progress record:\n got %s\nwant %s", got, want)
		}
		s := genSplit().Draw(t, "split")
		s.Parent = ""
		want, _ = json.Marshal(oldSplitWire{Schema, string(s.ID), s.FP, s.Weight, s.Epoch, s.Status.String(), nullable(s.Owner), nullable(s.Nonce), s.Attempts, s.WrittenAtMs})
		if got := EncodeSplit(s); string(got) != string(want) {
			t.Fatalf("split record without parent:\n got %s\nwant %s", got, want)
		}
	})
}

func TestDecodeRuntimeSplitFields(t *testing.T) {
	const notRecord = ": not a coordination record; something else is writing to this store namespace"
	head := `{"schema":1,"id":"s0","fp":2999856630804491591,"epoch":3,"owner":"w1","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`
	progress := func(tail string) string { return head + tail + `}` }
	cut := func(id, epoch, counter, weight string) string {
		return `,"descriptor":"cA==","cut":{"id":"` + id + `","epoch":` + epoch + `,"counter":` + counter + `,"weight":` + weight + `,"descriptor":"cg=="}`
	}
	split := func(id, tail string) string {
		return `{"schema":1,"id":"` + id + `","fp":2999856630804491591,"weight":1,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":1` + tail + `}`
	}
	tests := []struct {
		name   string
		decode func([]byte) error
		in     string
		reason string // "" decodes
		detail string // the cause's text, for a notRecord reason
	}{
		{"progress with a cut", progressDec("progress.s0"), progress(cut("_s0_3_1", "3", "1", "5")), "", ""},
		{"progress with an earlier tenancy's cut", progressDec("progress.s0"), progress(cut("_s0_2_4", "2", "4", "5")), "", ""},
		{"descriptor without cut", progressDec("progress.s0"), progress(`,"descriptor":"cA=="`), "progress.s0" + notRecord, "fields descriptor and cut must be present together"},
		{"cut without descriptor", progressDec("progress.s0"), progress(`,"cut":{"id":"_s0_3_1","epoch":3,"counter":1,"weight":5,"descriptor":""}`), "progress.s0" + notRecord, "fields descriptor and cut must be present together"},
		{"null cut", progressDec("progress.s0"), progress(`,"descriptor":"cA==","cut":null`), "progress.s0" + notRecord, "field cut is not an object"},
		{"null descriptor", progressDec("progress.s0"), progress(`,"descriptor":null` + cut("_s0_3_1", "3", "1", "5")[len(`,"descriptor":"cA=="`):]), "progress.s0" + notRecord, "field descriptor is not a string"},
		{"cut id of another split", progressDec("progress.s0"), progress(cut("_s1_3_1", "3", "1", "5")), "progress.s0" + notRecord, "field cut: id is not the residual id of this split, epoch and counter"},
		{"cut id of another counter", progressDec("progress.s0"), progress(cut("_s0_3_2", "3", "1", "5")), "progress.s0" + notRecord, "field cut: id is not the residual id"},
		{"cut above the record's epoch", progressDec("progress.s0"), progress(cut("_s0_4_1", "4", "1", "5")), "progress.s0" + notRecord, "field cut: epoch is 0 or above the record's"},
		{"cut at epoch 0", progressDec("progress.s0"), progress(cut("_s0_0_1", "0", "1", "5")), "progress.s0" + notRecord, "field cut: epoch is 0"},
		{"cut counter 0", progressDec("progress.s0"), progress(cut("_s0_3_0", "3", "0", "5")), "progress.s0" + notRecord, "field cut: counter is 0"},
		{"cut weight 0", progressDec("progress.s0"), progress(cut("_s0_3_1", "3", "1", "0")), "progress.s0" + notRecord, "field cut: weight is 0"},
		{"cut missing a field", progressDec("progress.s0"), progress(`,"descriptor":"cA==","cut":{"id":"_s0_3_1","epoch":3,"counter":1,"descriptor":"cg=="}`), "progress.s0" + notRecord, "field cut: missing field weight"},
		{"cut with an unknown field", progressDec("progress.s0"), progress(`,"descriptor":"cA==","cut":{"id":"_s0_3_1","epoch":3,"counter":1,"weight":5,"descriptor":"cg==","x":1}`), "progress.s0" + notRecord, `field cut: unknown field "x"`},
		{"cut duplicate field", progressDec("progress.s0"), progress(`,"descriptor":"cA==","cut":{"id":"_s0_3_1","epoch":3,"epoch":3,"counter":1,"weight":5,"descriptor":"cg=="}`), "progress.s0" + notRecord, `field cut: duplicate field "epoch"`},
		{"cut bad base64", progressDec("progress.s0"), progress(`,"descriptor":"cA==","cut":{"id":"_s0_3_1","epoch":3,"counter":1,"weight":5,"descriptor":"YR=="}`), "progress.s0: field cut.descriptor is not valid base64", ""},
		{"cut id not a name", progressDec("progress.s0"), progress(cut("_s0.3_1", "3", "1", "5")), "progress.s0" + notRecord, "field cut: field id may only contain"},
		{"split residual", splitDec("job.split._s0_3_1"), split("_s0_3_1", `,"parent":"s0"`), "", ""},
		{"split residual long form", splitDec("job.split." + string(ResidualID(coordination.SplitID(strings.Repeat("p", 128)), 2, 1))),
			split(string(ResidualID(coordination.SplitID(strings.Repeat("p", 128)), 2, 1)), `,"parent":"`+strings.Repeat("p", 128)+`"`), "", ""},
		{"split parent that does not derive the id", splitDec("job.split._s0_3_1"), split("_s0_3_1", `,"parent":"s1"`), "job.split._s0_3_1" + notRecord, "field parent does not derive the record's id"},
		{"split planned id with a parent", splitDec("job.split.s0"), split("s0", `,"parent":"p"`), "job.split.s0" + notRecord, "field parent does not derive"},
		{"split null parent", splitDec("job.split._s0_3_1"), split("_s0_3_1", `,"parent":null`), "job.split._s0_3_1" + notRecord, "field parent is not a string"},
		{"split residual form without parent", splitDec("job.split._s0_3_1"), split("_s0_3_1", ``), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode([]byte(tc.in))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.in, err)
				}
				return
			}
			wantFatal(t, err, tc.reason)
			if tc.detail != "" {
				if cause := errors.Unwrap(err); cause == nil || !strings.Contains(cause.Error(), tc.detail) {
					t.Fatalf("cause %v, want one containing %q", cause, tc.detail)
				}
			}
		})
	}
}

// tenancyRecord draws the progress record a held tenancy wrote last: epoch
// at least 1 and below the top but one, not completed, with or without a cut (this tenancy's or an
// earlier one's).
func tenancyRecord() *rapid.Generator[ProgressRecord] {
	return rapid.Custom(func(t *rapid.T) ProgressRecord {
		r := genProgress().Draw(t, "progress")
		r.Epoch = min(max(r.Epoch, 1), math.MaxUint64-2) // room for a next tenancy
		r.Completed = false
		if r.Cut != nil && r.Cut.Epoch > r.Epoch {
			r.Cut = nil
			r.Descriptor = nil
		}
		return r
	})
}

// TestCutTransitions: a cut commit records the cut and the primary in one
// record that decodes back; the counter follows the durable record; later
// commits and a fence keep the cut; and a read-back that lacks the cut is
// never taken for the cut commit's landing.
func TestCutTransitions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := tenancyRecord().Draw(t, "record")
		primary, residual := genBytes().Draw(t, "primary"), genBytes().Draw(t, "residual")
		c, ok := r.NextCut(residual, rapid.Uint64().Draw(t, "weight"))
		want := uint64(1)
		if r.Cut != nil && r.Cut.Epoch == r.Epoch {
			if r.Cut.Counter == math.MaxUint64 {
				if ok {
					t.Fatalf("NextCut after counter %d: ok", r.Cut.Counter)
				}
				return
			}
			want = r.Cut.Counter + 1
		}
		if !ok || c.Counter != want || c.Epoch != r.Epoch || c.ID != ResidualID(r.ID, r.Epoch, want) || c.Weight == 0 {
			t.Fatalf("NextCut of %+v = %+v, want counter %d", r.Cut, c, want)
		}
		p := genSplitProgress().Draw(t, "progress")
		p.Completed = false
		cr := r.CommitCut(p, primary, c, 5)
		back, err := DecodeProgress(ProgressKey(r.ID), EncodeProgress(cr), r.FP)
		if err != nil {
			t.Fatalf("cut commit does not decode: %v", err)
		}
		if !reflect.DeepEqual(back, cr) {
			t.Fatalf("cut commit round trip:\n got %#v\nwant %#v", back, cr)
		}
		if string(cr.DescriptorOr([]byte("spec"))) != string(primary) {
			t.Fatalf("a cut split's tenancies read %q, want the primary %q", cr.DescriptorOr([]byte("spec")), primary)
		}
		if next, ok := cr.NextCut(nil, 1); c.Counter < math.MaxUint64 && (!ok || next.Counter != c.Counter+1) {
			t.Fatalf("the cut after %d is numbered %d", c.Counter, next.Counter)
		}
		// Later writes keep the cut: a commit, a fence of the next tenancy.
		later := cr.Commit(genSplitProgress().Draw(t, "later"), 6)
		fenced := later.Fence("w2", later.Epoch+1, 7)
		for _, w := range []ProgressRecord{later, fenced} {
			if !sameCut(w, cr) {
				t.Fatalf("a later write dropped the cut: %+v", w)
			}
		}
		if next, ok := fenced.NextCut(nil, 1); !ok || next.Counter != 1 {
			t.Fatalf("a new tenancy's first cut is not numbered 1")
		}
		// The lost-reply case: the read-back has the commit's progress but
		// not its cut (the cut commit did not land): not the same.
		plain := r.Commit(p, 5)
		if plain.SameProgress(cr) || cr.SameProgress(plain) {
			t.Fatalf("a record without the cut passes for the cut commit")
		}
		if !cr.SameProgress(back) {
			t.Fatalf("the cut commit does not pass for itself after a round trip")
		}
	})
}

// TestResidualRecords: every writer of one durable cut (the owner after
// its cut commit, a claimant rolling it forward) writes the same spec and,
// but for its advisory time, the same split record; both decode, and a
// lost create recognises them but not another cut's.
func TestResidualRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := tenancyRecord().Draw(t, "record")
		c, ok := r.NextCut(genBytes().Draw(t, "residual"), rapid.Uint64().Draw(t, "weight"))
		if !ok {
			return
		}
		cr := r.CommitCut(coordination.SplitProgress{Watermark: 1}, []byte("p"), c, 1)
		fromOwner := *cr.Cut
		// The claimant decodes the cut from the record it fenced.
		fencedBytes := EncodeProgress(cr.Fence("w2", cr.Epoch+1, 2))
		fenced, err := DecodeProgress(ProgressKey(r.ID), fencedBytes, r.FP)
		if err != nil {
			t.Fatal(err)
		}
		fromClaimant := *fenced.Cut
		gen := rapid.Uint64().Draw(t, "generation")
		s1, s2 := EncodeSpec(fromOwner.ResidualSpec(r.FP, gen)), EncodeSpec(fromClaimant.ResidualSpec(r.FP, gen))
		if string(s1) != string(s2) {
			t.Fatalf("two writers of one cut write different specs:\n%s\n%s", s1, s2)
		}
		sp1, sp2 := fromOwner.ResidualSplit(r.ID, r.FP, 10), fromClaimant.ResidualSplit(r.ID, r.FP, 20)
		sp2.WrittenAtMs = sp1.WrittenAtMs
		if !reflect.DeepEqual(sp1, sp2) {
			t.Fatalf("two writers of one cut write different split records:\n%+v\n%+v", sp1, sp2)
		}
		spec, err := DecodeSpec(SpecKey(c.ID), s1, r.FP)
		if err != nil {
			t.Fatal(err)
		}
		split, err := DecodeSplit(SplitKey(c.ID), EncodeSplit(sp1), r.FP)
		if err != nil {
			t.Fatal(err)
		}
		if split.Epoch != 0 || split.Status != StatusRunnable || split.Owner != "" || split.Parent != r.ID || split.Weight != c.Weight {
			t.Fatalf("residual split record %+v", split)
		}
		if !c.IsResidualSpec(spec) || !c.IsResidualSplit(r.ID, split) {
			t.Fatalf("a lost create does not recognise its own residual")
		}
		if other, ok := cr.NextCut(genBytes().Draw(t, "other residual"), 1); ok && other.IsResidualSplit(r.ID, split) {
			t.Fatalf("cut %d recognises cut %d's residual", other.Counter, c.Counter)
		}
		claimed := split.Claim("w3", "n", 1, false, 30)
		if !c.IsResidualSplit(r.ID, claimed) {
			t.Fatalf("a claimed residual is no longer recognised")
		}
	})
}

func TestCommitCutPanicsOnBugs(t *testing.T) {
	r := ProgressRecord{ID: "s0", Epoch: 3}
	c, _ := r.NextCut(nil, 1)
	next := func(r ProgressRecord) Cut { c, _ := r.NextCut(nil, 1); return c }
	for _, tc := range []struct {
		name string
		p    coordination.SplitProgress
		c    Cut
	}{
		{"completed", coordination.SplitProgress{Completed: true}, c},
		{"another tenancy's cut", coordination.SplitProgress{}, next(ProgressRecord{ID: "s0", Epoch: 2})},
		{"another split's cut", coordination.SplitProgress{}, next(ProgressRecord{ID: "s1", Epoch: 3})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			r.CommitCut(tc.p, nil, tc.c, 1)
		})
	}
}
