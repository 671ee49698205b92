package wire

import (
	"github.com/spate-go/coordination"
)

// AssignedSetChanged is the assign actor's diff of this worker's
// assignment, to the split-writer actor. Decided is false while
// no assignment record is known (then the rest is empty). Splits is the
// assigned set; Added the splits it names that the previous set did not (every
// split of the first set after an undecided one), Removed those the previous
// set named and it does not.
type AssignedSetChanged struct {
	Decided bool
	Splits  []coordination.SplitID
	Added   []coordination.SplitID
	Removed []coordination.SplitID
}
