package protocol

import (
	"math"
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
)

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
