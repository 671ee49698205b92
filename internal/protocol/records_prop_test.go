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

func TestRoundTripProgress(t *testing.T) {
	roundTrip(t, genProgress(), EncodeProgress, func(r ProgressRecord, b []byte) (ProgressRecord, error) {
		return DecodeProgress(SplitKey(r.ID), b, r.FP)
	})
}

func TestRoundTripAssignment(t *testing.T) {
	roundTrip(t, genAssignment(), EncodeAssignment, func(_ AssignmentRecord, b []byte) (AssignmentRecord, error) {
		return DecodeAssignment(AssignKey("w1"), b)
	})
}

func TestRoundTripLease(t *testing.T) {
	roundTrip(t, genLease(), EncodeLease, func(_ LeaseRecord, b []byte) (LeaseRecord, error) { return DecodeLease(SplitKey("s0"), b) })
}

func TestRoundTripLeader(t *testing.T) {
	roundTrip(t, genLeader(), EncodeLeader, func(_ LeaderRecord, b []byte) (LeaderRecord, error) { return DecodeLeader(KeyLeader, b) })
}

func TestRoundTripPresence(t *testing.T) {
	roundTrip(t, genPresence(), EncodePresence, func(_ PresenceRecord, b []byte) (PresenceRecord, error) {
		return DecodePresence(WorkerKey("w1"), b)
	})
}

// TestDecodeRejectsOtherFP checks that a spec or progress record never decodes
// under another job's fp, whatever else it holds.
func TestDecodeRejectsOtherFP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genProgress().Draw(t, "record")
		other := rapid.Uint64().Filter(func(v uint64) bool { return v != r.FP }).Draw(t, "other")
		if _, err := DecodeProgress(SplitKey(r.ID), EncodeProgress(r), other); err == nil {
			t.Fatalf("progress record with fp %d decoded under fp %d", r.FP, other)
		}
		s := genSpec().Draw(t, "spec")
		if _, err := DecodeSpec(SpecKey(s.ID), EncodeSpec(s), s.FP^1); err == nil {
			t.Fatalf("spec record with fp %d decoded under fp %d", s.FP, s.FP^1)
		}
	})
}
