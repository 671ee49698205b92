package lanes

import "github.com/spate-go/coordination"

// SplitOf decodes a spec [Split.Spec] returned (or a residual's, which the
// kit writes in the same layout) back into its split: its id, range,
// weight and Meta. A planner or a test reads planned splits back with it.
func SplitOf[P Position](spec coordination.SplitSpec) (Split[P], error) {
	d, err := decodeDescriptor(kindOf[P](), spec.Descriptor)
	if err != nil {
		return Split[P]{}, errorf("split %s: %v", spec.ID, err)
	}
	return Split[P]{ID: spec.ID, Range: d.rng, Weight: d.weight, Meta: d.meta}, nil
}
