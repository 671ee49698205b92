package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
)

// splitPrefix starts every split id this program plans; a store key whose
// last dot-separated part starts with it names one of those splits,
// whatever key family the protocol files it under.
const splitPrefix = "sp-"

// splitID returns the id of split i.
func splitID(i int) coordination.SplitID {
	return coordination.SplitID(fmt.Sprintf("%s%07d", splitPrefix, i))
}

// isSplitKey reports whether a store key names one of the planned splits:
// its last dot-separated part is splitPrefix and seven digits.
func isSplitKey(key string) bool {
	last, ok := strings.CutPrefix(key[strings.LastIndexByte(key, '.')+1:], splitPrefix)
	return ok && len(last) == 7 && strings.Trim(last, "0123456789") == ""
}

// planner plans n splits of weight 1 as one final plan and remembers when
// its first run returned. Safe for concurrent use.
type planner struct {
	n        int
	job      string
	returned atomic.Int64 // unix nanoseconds of the first return; 0 before
}

// Fingerprint names the job and its size.
func (p *planner) Fingerprint() string { return fmt.Sprintf("bench-fleet/%s/%d", p.job, p.n) }

// Plan returns the n splits, final.
func (p *planner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	splits := make([]coordination.PlannedSplit, p.n)
	for i := range splits {
		id := splitID(i)
		splits[i] = coordination.PlannedSplit{Spec: coordination.SplitSpec{ID: id, Descriptor: []byte(id), Weight: 1}}
	}
	p.returned.CompareAndSwap(0, time.Now().UnixNano())
	return coordination.SplitPlan{Splits: splits, Finality: coordination.PlanFinal}, nil
}

// returnedAt is when the first run returned (zero before).
func (p *planner) returnedAt() time.Time {
	return unixNanos(p.returned.Load())
}
