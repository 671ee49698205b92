package main

import (
	"fmt"
	"slices"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// tally is what the ledger says about a job.
type tally struct {
	planned    int64                        // records of the job
	delivered  int64                        // records delivered at least once
	deliveries int64                        // every delivery, duplicates included
	byWorker   map[string]int64             // deliveries per worker instance
	gaps       []lanes.Range[int64]         // planned records never delivered, in order
	residuals  map[coordination.SplitID]int // splits cut off at runtime that delivered records
}

// lost returns the planned records never delivered.
func (t tally) lost() int64 { return t.planned - t.delivered }

// duplicates returns the deliveries beyond each record's first.
func (t tally) duplicates() int64 { return t.deliveries - t.delivered }

// tallyOf tallies entries against the data set ds. A delivery counts for
// the planned split whose range holds it, whichever split it was read
// under: a runtime split's residual reads part of its parent's range, under
// an id of its own (docs/protocol.md, "Residual ids").
func tallyOf(ds *dataset, entries []delivery) tally {
	t := tally{planned: ds.records, byWorker: map[string]int64{}, residuals: map[coordination.SplitID]int{}}
	bySplit := map[coordination.SplitID][]lanes.Range[int64]{}
	for _, d := range entries {
		if d.End <= d.Start {
			continue
		}
		t.deliveries += d.End - d.Start
		t.byWorker[d.Worker] += d.End - d.Start
		s := ds.holder(d.Start)
		if d.Split != s.ID {
			t.residuals[d.Split]++
		}
		bySplit[s.ID] = append(bySplit[s.ID], lanes.Range[int64]{Start: d.Start, End: d.End})
	}
	for _, s := range ds.splits {
		rs := bySplit[s.ID]
		slices.SortFunc(rs, func(a, b lanes.Range[int64]) int { return int(a.Start - b.Start) })
		pos := s.Range.Start
		for _, r := range rs {
			if r.Start > pos {
				t.gaps = append(t.gaps, lanes.Range[int64]{Start: pos, End: min(r.Start, s.Range.End)})
			}
			if r.End > pos {
				t.delivered += min(r.End, s.Range.End) - max(pos, r.Start)
				pos = min(max(pos, r.End), s.Range.End)
			}
		}
		if pos < s.Range.End {
			t.gaps = append(t.gaps, lanes.Range[int64]{Start: pos, End: s.Range.End})
		}
	}
	return t
}

// formatRanges renders at most limit ranges as "start-end" (end exclusive)
// and how many more there are.
func formatRanges(rs []lanes.Range[int64], limit int) string {
	s := ""
	for i, r := range rs[:min(len(rs), limit)] {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d-%d", r.Start, r.End)
	}
	if len(rs) > limit {
		s += fmt.Sprintf(" and %d more", len(rs)-limit)
	}
	return s
}
