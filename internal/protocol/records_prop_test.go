package protocol

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// roundTrip checks, for records drawn from gen, that decoding the encoding
// returns the record and that the encoding is byte-stable.
func roundTrip[R any](t *testing.T, gen *rapid.Generator[R], enc func(R) []byte, dec func(R, []byte) (R, error)) {
	t.Helper()
	rapid.Check(t, func(t *rapid.T) {
		r := gen.Draw(t, "record")
		b := enc(r)
		back, err := dec(r, b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip of %s:\n got: %#v\nwant: %#v", b, back, r)
		}
		if again := enc(back); !bytes.Equal(again, b) {
			t.Fatalf("encoding not stable:\n%s\n%s", b, again)
		}
	})
}

func TestRoundTripPlan(t *testing.T) {
	roundTrip(t, genPlan(), EncodePlan, func(_ PlanRecord, b []byte) (PlanRecord, error) { return DecodePlan(KeyPlan, b) })
}

func TestRoundTripSpec(t *testing.T) {
	roundTrip(t, genSpec(), EncodeSpec, func(r SpecRecord, b []byte) (SpecRecord, error) {
		return DecodeSpec(SpecKey(r.ID), b, r.FP)
	})
}

func TestRoundTripSplit(t *testing.T) {
	roundTrip(t, genSplit(), EncodeSplit, func(r SplitRecord, b []byte) (SplitRecord, error) {
		return DecodeSplit(SplitKey(r.ID), b, r.FP)
	})
}

func TestRoundTripProgress(t *testing.T) {
	roundTrip(t, genProgress(), EncodeProgress, func(r ProgressRecord, b []byte) (ProgressRecord, error) {
		return DecodeProgress(ProgressKey(r.ID), b, r.FP)
	})
}

func TestRoundTripAssignment(t *testing.T) {
	roundTrip(t, genAssignment(), EncodeAssignment, func(_ AssignmentRecord, b []byte) (AssignmentRecord, error) {
		return DecodeAssignment(AssignKey("w1"), b)
	})
}

func TestRoundTripLeader(t *testing.T) {
	roundTrip(t, genLeader(), EncodeLeader, func(_ LeaderRecord, b []byte) (LeaderRecord, error) { return DecodeLeader(KeyLeader, b) })
}

func TestRoundTripPresence(t *testing.T) {
	roundTrip(t, genPresence(), EncodePresence, func(_ PresenceRecord, b []byte) (PresenceRecord, error) {
		return DecodePresence(WorkerKey("w1"), b)
	})
}

// TestDecodeRejectsOtherFP checks that a spec, split or progress record
// never decodes under another job's fp, whatever else it holds.
func TestDecodeRejectsOtherFP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		other := func(fp uint64) uint64 {
			return rapid.Uint64().Filter(func(v uint64) bool { return v != fp }).Draw(t, "other")
		}
		sr := genSplit().Draw(t, "split")
		if fp := other(sr.FP); decodes(DecodeSplit(SplitKey(sr.ID), EncodeSplit(sr), fp)) {
			t.Fatalf("split record with fp %d decoded under fp %d", sr.FP, fp)
		}
		pr := genProgress().Draw(t, "progress")
		if fp := other(pr.FP); decodes(DecodeProgress(ProgressKey(pr.ID), EncodeProgress(pr), fp)) {
			t.Fatalf("progress record with fp %d decoded under fp %d", pr.FP, fp)
		}
		s := genSpec().Draw(t, "spec")
		if _, err := DecodeSpec(SpecKey(s.ID), EncodeSpec(s), s.FP^1); err == nil {
			t.Fatalf("spec record with fp %d decoded under fp %d", s.FP, s.FP^1)
		}
	})
}

// TestDecodeRejectsOtherKey checks that a spec, split or progress record
// never decodes at another split's key, and that the two record families
// never decode as each other: a record in the wrong family is corrupt.
func TestDecodeRejectsOtherKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sr := genSplit().Draw(t, "split")
		pr := genProgress().Draw(t, "progress")
		sp := genSpec().Draw(t, "spec")
		id := genSplitID().Draw(t, "other_id")
		if id != sr.ID {
			if _, err := DecodeSplit(SplitKey(id), EncodeSplit(sr), sr.FP); err == nil {
				t.Fatalf("split record of %q decoded at %s", sr.ID, SplitKey(id))
			}
		}
		if id != pr.ID {
			if _, err := DecodeProgress(ProgressKey(id), EncodeProgress(pr), pr.FP); err == nil {
				t.Fatalf("progress record of %q decoded at %s", pr.ID, ProgressKey(id))
			}
		}
		if id != sp.ID {
			if _, err := DecodeSpec(SpecKey(id), EncodeSpec(sp), sp.FP); err == nil {
				t.Fatalf("spec record of %q decoded at %s", sp.ID, SpecKey(id))
			}
		}
		if _, err := DecodeProgress(ProgressKey(sr.ID), EncodeSplit(sr), sr.FP); err == nil {
			t.Fatalf("split record decoded as a progress record: %s", EncodeSplit(sr))
		}
		if _, err := DecodeSplit(SplitKey(pr.ID), EncodeProgress(pr), pr.FP); err == nil {
			t.Fatalf("progress record decoded as a split record: %s", EncodeProgress(pr))
		}
	})
}

// decodes reports whether a decoder accepted its input.
func decodes[R any](_ R, err error) bool { return err == nil }

// TestCanonicalScanOfEncodings checks that the split record's encoding
// takes the decoder's fast path (scanCanonical) and progress encodings do
// whenever their strings need no escape, each scanned to the full scan's
// values, and that a byte changed or dropped never makes the fast path
// disagree with the full scan.
func TestCanonicalScanOfEncodings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		split, progress := canonicalLayouts[0], canonicalLayouts[1]
		b := EncodeSplit(genSplit().Draw(t, "split"))
		if !checkCanonical(t, b, split.names, split.optional) {
			t.Fatalf("split record %q does not take the fast path", b)
		}
		p := genProgress().Draw(t, "progress")
		pb := EncodeProgress(p)
		if !checkCanonical(t, pb, progress.names, progress.optional) && p.Cut == nil && !bytes.Contains(pb, []byte(`\`)) {
			t.Fatalf("progress record %q without a cut or escapes does not take the fast path", pb)
		}
		i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		changed := append([]byte{}, b...)
		changed[i] = rapid.Byte().Draw(t, "byte")
		checkCanonical(t, changed, split.names, split.optional)
		checkCanonical(t, append(append([]byte{}, b[:i]...), b[i+1:]...), split.names, split.optional)
	})
}

// TestSplitDecodeFastPath checks that every split record's encoding takes
// DecodeSplit's fast path (decodeSplitCanonical) to the record itself, and
// that a byte changed or dropped never makes the fast path disagree with
// the general decoder.
func TestSplitDecodeFastPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genSplit().Draw(t, "split")
		key, b := SplitKey(r.ID), EncodeSplit(r)
		if got, ok := decodeSplitCanonical(key, b, r.FP); !ok || !reflect.DeepEqual(got, r) {
			t.Fatalf("%q takes the fast path %v as %#v, want %#v", b, ok, got, r)
		}
		checkSplitCanonical(t, key, b, r.FP)
		i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		changed := append([]byte{}, b...)
		changed[i] = rapid.Byte().Draw(t, "byte")
		checkSplitCanonical(t, key, changed, r.FP)
		checkSplitCanonical(t, key, append(append([]byte{}, b[:i]...), b[i+1:]...), r.FP)
	})
}
