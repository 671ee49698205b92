package lanes

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// A cut point of a key range lies strictly inside it, so the primary and
// the residual are both non-empty, and interpolated fractions are ordered.
func TestKeysBetweenIsInside(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := keys{}
		lo := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "lo")
		end := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "end")
		if !k.beforeEnd(lo, end) {
			t.Skip("empty range")
		}
		share := rapid.Float64Range(0.01, 0.99).Draw(t, "share")
		s, ok := k.between(lo, end, share)
		if !ok {
			return
		}
		if !k.less(lo, s) || !k.beforeEnd(s, end) {
			t.Fatalf("between(%q, %q, %v) = %q, outside the range", lo, end, share, s)
		}
		if f := k.fraction(lo, s, end); f < 0 || f > 1 {
			t.Fatalf("fraction of the cut = %v", f)
		}
	})
}

// An offset range's cut point is inside it, at least one past lo.
func TestOffsetsBetweenIsInside(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := offsets{}
		lo := rapid.Int64Range(-1e12, 1e12).Draw(t, "lo")
		end := lo + rapid.Int64Range(1, 1e9).Draw(t, "span")
		share := rapid.Float64Range(0.5, 0.999).Draw(t, "share")
		s, ok := o.between(lo, end, share)
		if end-lo >= 2 != ok {
			t.Fatalf("between(%d, %d) ok = %v", lo, end, ok)
		}
		if ok && (s <= lo || s >= end) {
			t.Fatalf("between(%d, %d, %v) = %d, outside the range", lo, end, share, s)
		}
	})
}

// Descriptors and key states decode to what was encoded; any truncation is
// an error, never a panic.
func TestDescriptorRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := keys{}
		d := descriptor[[]byte]{
			rng:    Range[[]byte]{Start: rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "start")},
			weight: rapid.Uint64().Draw(t, "weight"),
			meta:   rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "meta"),
		}
		if rapid.Bool().Draw(t, "bounded") {
			d.rng.End = append(append([]byte{}, d.rng.Start...), rapid.SliceOfN(rapid.Byte(), 1, 4).Draw(t, "more")...)
		}
		b := encodeDescriptor[[]byte](k, d)
		got, err := decodeDescriptor[[]byte](k, b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.rng.Start, d.rng.Start) || !bytes.Equal(got.rng.End, d.rng.End) || got.weight != d.weight || !bytes.Equal(got.meta, d.meta) {
			t.Fatalf("decoded %+v, encoded %+v", got, d)
		}
		if _, err := decodeDescriptor[int64](offsets{}, b); err == nil {
			t.Fatal("a key descriptor decoded as an offset one")
		}
		for i := range len(b) {
			if _, err := decodeDescriptor[[]byte](k, b[:i]); err == nil {
				t.Fatalf("a descriptor cut to %d of %d bytes decoded", i, len(b))
			}
		}
		m := mark[[]byte]{last: d.rng.Start, claimed: true, seq: rapid.Int64Range(1, 1e9).Draw(t, "seq")}
		p := k.progress(m, d.rng)
		back, err := k.resume(p, d.rng)
		if err != nil || !bytes.Equal(back.last, m.last) || back.seq != m.seq || !back.claimed {
			t.Fatalf("resume(progress(%+v)) = %+v, %v", m, back, err)
		}
	})
}

// Offsets and Keys cover their range exactly, in order, with no gap.
func TestPlannedRangesTile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Int64Range(-1000, 1000).Draw(t, "lo")
		hi := lo + rapid.Int64Range(1, 5000).Draw(t, "span")
		n := rapid.IntRange(1, 50).Draw(t, "n")
		splits := Offsets("o", lo, hi, n)
		at := lo
		for _, s := range splits {
			if s.Range.Start != at || s.Range.End <= s.Range.Start || s.Weight != uint64(s.Range.End-s.Range.Start) {
				t.Fatalf("split %+v after %d", s, at)
			}
			at = s.Range.End
		}
		if at != hi {
			t.Fatalf("offsets end at %d, want %d", at, hi)
		}
		klo := rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(t, "klo")
		var khi []byte
		if rapid.Bool().Draw(t, "kbounded") {
			khi = append(append([]byte{}, klo...), rapid.SliceOfN(rapid.Byte(), 1, 4).Draw(t, "kmore")...)
		}
		ks := Keys("k", klo, khi, n)
		if len(ks) == 0 || len(ks) > n || !bytes.Equal(ks[0].Range.Start, klo) || !bytes.Equal(ks[len(ks)-1].Range.End, khi) {
			t.Fatalf("Keys(%q, %q, %d) = %d splits", klo, khi, n, len(ks))
		}
		for i, s := range ks {
			if i > 0 && !bytes.Equal(s.Range.Start, ks[i-1].Range.End) {
				t.Fatalf("gap between split %d and %d", i-1, i)
			}
			if _, err := s.Spec(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A planner refuses an empty range and a bad id with a message naming the
// split.
func TestPlannerRefusesBadSplits(t *testing.T) {
	if _, err := Planner([]Split[int64]{{ID: "a", Range: Range[int64]{Start: 5, End: 5}}}); err == nil || !bytes.Contains([]byte(err.Error()), []byte("split a")) {
		t.Fatalf("empty range: %v", err)
	}
	if _, err := Planner([]Split[int64]{{ID: coordination.SplitID("a.b"), Range: Range[int64]{Start: 0, End: 5}}}); err == nil {
		t.Fatal("a split id with '.' was accepted")
	}
	if _, err := Planner[int64](nil); err == nil {
		t.Fatal("an empty plan was accepted")
	}
}
