package lanes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/spate-go/coordination"
)

// Split is one split of a lanes plan: an id, a range of positions, a
// weight and the user's own descriptor bytes.
type Split[P Position] struct {
	// ID names the split (coordination.NewSplitID's rules).
	ID coordination.SplitID
	// Range is the positions the split reads.
	Range Range[P]
	// Weight is the split's load for balancing, in any unit the job uses
	// consistently (rows, bytes); 0 is treated as 1. Runtime cuts divide it
	// in proportion to the positions on each side.
	Weight uint64
	// Meta is carried verbatim to every lane of the split and its residuals
	// ([Lane.Meta]): a table name, an object key, a version pin.
	Meta []byte
}

// Spec returns the split's spec, its descriptor in the kit's layout. A
// planner of its own (an open plan, a listing cursor) returns these.
func (s Split[P]) Spec() (coordination.SplitSpec, error) {
	k := kindOf[P]()
	if _, err := coordination.NewSplitID(string(s.ID)); err != nil {
		return coordination.SplitSpec{}, err
	}
	if !k.beforeEnd(s.Range.Start, s.Range.End) {
		return coordination.SplitSpec{}, fmt.Errorf("lanes: split %s: range [%v, %v) is empty; give it a start below its end", s.ID, s.Range.Start, s.Range.End)
	}
	w := max(s.Weight, 1)
	d := descriptor[P]{rng: s.Range, weight: w, meta: s.Meta}
	return coordination.SplitSpec{ID: s.ID, Descriptor: encodeDescriptor(k, d), Weight: w}, nil
}

// Planner returns a final plan of splits, for [driver.WithPlanner]. Its
// fingerprint is a hash of the splits, so every worker given the same
// splits presents the same job identity and a worker given others is
// refused at Start.
func Planner[P Position](splits []Split[P]) (coordination.Planner, error) {
	h := sha256.New()
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for _, s := range splits {
		spec, err := s.Spec()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%s\x00%x\x00%d\x00", spec.ID, spec.Descriptor, spec.Weight)
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: spec})
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("lanes: a plan needs at least one split")
	}
	return fixedPlanner{fingerprint: "lanes:v1:" + hex.EncodeToString(h.Sum(nil)[:12]), plan: plan}, nil
}

// fixedPlanner returns the same final plan on every run.
type fixedPlanner struct {
	fingerprint string
	plan        coordination.SplitPlan
}

func (p fixedPlanner) Fingerprint() string { return p.fingerprint }

func (p fixedPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return p.plan, nil
}

// Offsets divides [lo, hi) into n ranges of nearly equal length, weighted
// by their length and named prefix-000000, prefix-000001, ... (n is
// clamped to 1 and to hi-lo).
func Offsets(prefix string, lo, hi int64, n int) []Split[int64] {
	if hi <= lo {
		return nil
	}
	n = int(min(max(int64(n), 1), hi-lo))
	splits := make([]Split[int64], 0, n)
	for i := range n {
		a := lo + (hi-lo)*int64(i)/int64(n)
		b := lo + (hi-lo)*int64(i+1)/int64(n)
		splits = append(splits, Split[int64]{
			ID:     coordination.SplitID(fmt.Sprintf("%s-%06d", prefix, i)),
			Range:  Range[int64]{Start: a, End: b},
			Weight: uint64(b - a),
		})
	}
	return splits
}

// Keys divides the key range [lo, hi) into n ranges at interpolated keys
// (an empty hi: to the end of the key space), each of weight 1, named as
// [Offsets] names them. Interpolation assumes keys spread evenly over the
// bytes past lo's and hi's common prefix (as Beam's ByteKeyRange does);
// give weights of your own when they do not. Fewer than n ranges come back
// when the range is too narrow to divide.
func Keys(prefix string, lo, hi []byte, n int) []Split[[]byte] {
	k := keys{}
	if !k.beforeEnd(lo, hi) {
		return nil
	}
	var splits []Split[[]byte]
	start := lo
	for i := range max(n, 1) {
		end := hi
		if i < n-1 {
			// the i+1'th boundary of n, as a share of what is left after start
			if s, ok := k.between(start, hi, 1/float64(n-i)); ok {
				end = s
			}
		}
		splits = append(splits, Split[[]byte]{
			ID:     coordination.SplitID(fmt.Sprintf("%s-%06d", prefix, len(splits))),
			Range:  Range[[]byte]{Start: start, End: end},
			Weight: 1,
		})
		if len(end) == 0 || !k.less(end, hi) && len(hi) != 0 {
			break
		}
		start = end
	}
	return splits
}
