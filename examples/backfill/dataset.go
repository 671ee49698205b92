package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/spate-go/coordination"
)

// emptyEvery makes every split whose index is emptyEvery*k+emptyAt hold no
// records, so the run also shows how an empty split completes (Source.Sweep).
const (
	emptyEvery = 20
	emptyAt    = 7
)

// recordRange is a half-open range [Start, End) of record numbers.
type recordRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Len returns the number of records in the range.
func (r recordRange) Len() int64 { return r.End - r.Start }

// String renders the range as "start-end" (end exclusive).
func (r recordRange) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// dataSplit is one split of the generated data set: a contiguous range of
// record numbers. The range, JSON-encoded, is the split's descriptor, so a
// worker that never saw the plan can read the split from its spec alone.
type dataSplit struct {
	ID    coordination.SplitID
	Range recordRange
}

// dataset is the generated data set the job backfills: records numbered
// 0..records-1, cut into splits of uneven sizes. It is a pure function of the
// split and record counts, so every process that runs with the same flags
// plans exactly the same job.
type dataset struct {
	records     int64
	splits      []dataSplit
	misestimate bool // every split weighs the same, whatever its records (newMisestimated)
}

// newDataset cuts records into n splits of uneven, deterministic sizes: most
// are small, a few are large (sizes span about one order of magnitude), and
// every emptyEvery-th split from emptyAt is empty.
func newDataset(n int, records int64) *dataset {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(records)))
	weights := make([]float64, n)
	var sum float64
	for i := range weights {
		if i%emptyEvery == emptyAt {
			continue
		}
		u := rng.Float64()
		weights[i] = 0.2 + 2.0*u*u
		sum += weights[i]
	}
	sizes := make([]int64, n)
	var assigned int64
	for i, w := range weights {
		if sum > 0 {
			sizes[i] = int64(float64(records) * w / sum)
		}
		assigned += sizes[i]
	}
	// Hand the rounding remainder out one record at a time to non-empty splits.
	for i := 0; assigned < records; i = (i + 1) % n {
		if weights[i] > 0 {
			sizes[i]++
			assigned++
		}
	}
	width := max(3, len(fmt.Sprint(n-1)))
	ds := &dataset{records: records, splits: make([]dataSplit, n)}
	var start int64
	for i, size := range sizes {
		ds.splits[i] = dataSplit{
			ID:    coordination.SplitID(fmt.Sprintf("part-%0*d", width, i)),
			Range: recordRange{Start: start, End: start + size},
		}
		start += size
	}
	return ds
}

// describe says how the records are split and why the job's total weight
// (what coordctl status shows) is not the record count: an empty split
// weighs 1.
func (ds *dataset) describe() string {
	var empty int
	var smallest, largest, weight int64
	for i, s := range ds.splits {
		weight += int64(ds.spec(i).Weight)
		n := s.Range.Len()
		if n == 0 {
			empty++
			continue
		}
		if smallest == 0 || n < smallest {
			smallest = n
		}
		largest = max(largest, n)
	}
	if ds.misestimate {
		return fmt.Sprintf("-misestimate: splits of %s to %s records, every one weighing %d: the planner cannot tell the one of a quarter of the records from the rest", human(smallest), human(largest), ds.weight(0))
	}
	d := fmt.Sprintf("splits of %s to %s records, each weighing its record count", human(smallest), human(largest))
	if empty > 0 {
		d += fmt.Sprintf("; %s at weight 1 (a weight of 0 counts as 1), so the job weighs %d", count(empty, "empty split"), weight)
	}
	return d
}

// encodeDescriptor renders a split's range as its descriptor.
func encodeDescriptor(r recordRange) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // two int64 fields always marshal
	}
	return b
}

// decodeDescriptor reads a split's range back from its descriptor.
func decodeDescriptor(b []byte) (recordRange, error) {
	var r recordRange
	if err := json.Unmarshal(b, &r); err != nil {
		return recordRange{}, fmt.Errorf("split descriptor %q: %w", b, err)
	}
	if r.Start < 0 || r.End < r.Start {
		return recordRange{}, fmt.Errorf("split descriptor %q: not a record range", b)
	}
	return r, nil
}

// spec returns the coordination spec of split i: its range as descriptor and
// its size as weight (an empty split weighs 1; the library treats 0 as 1).
func (ds *dataset) spec(i int) coordination.SplitSpec {
	s := ds.splits[i]
	return coordination.SplitSpec{
		ID:         s.ID,
		Descriptor: encodeDescriptor(s.Range),
		Weight:     ds.weight(i),
	}
}

// weight is split i's weight: its record count, or with misestimate the
// average split's, whatever split i holds.
func (ds *dataset) weight(i int) uint64 {
	if ds.misestimate {
		return uint64(max(1, ds.records/int64(len(ds.splits))))
	}
	return uint64(max(1, ds.splits[i].Range.Len()))
}

// newMisestimated is the data set of -misestimate: one split in the middle
// holds a quarter of the records, the others share the rest evenly, and
// the planner weighs every split the same, as a planner that cannot count
// the rows of a key range would.
func newMisestimated(n int, records int64) *dataset {
	big := n / 2
	sizes := make([]int64, n)
	sizes[big] = records / 4
	if n == 1 {
		sizes[big] = records
	}
	rest := records - sizes[big]
	for i, left := 0, rest%max(1, int64(n-1)); i < n; i++ {
		if i == big {
			continue
		}
		sizes[i] = rest / int64(n-1)
		if left > 0 {
			sizes[i]++
			left--
		}
	}
	ds := &dataset{records: records, splits: make([]dataSplit, n), misestimate: true}
	width := max(3, len(fmt.Sprint(n-1)))
	var start int64
	for i, size := range sizes {
		ds.splits[i] = dataSplit{ID: coordination.SplitID(fmt.Sprintf("part-%0*d", width, i)), Range: recordRange{Start: start, End: start + size}}
		start += size
	}
	return ds
}

// holder returns the id of the split whose range holds record n (the last
// split for a record past the end).
func (ds *dataset) holder(n int64) coordination.SplitID {
	i, _ := slices.BinarySearchFunc(ds.splits, n, func(s dataSplit, n int64) int {
		switch {
		case s.Range.End <= n:
			return -1
		case s.Range.Start > n:
			return 1
		}
		return 0
	})
	return ds.splits[min(i, len(ds.splits)-1)].ID
}

// datasetOf returns the data set the flags describe.
func datasetOf(o *options) *dataset {
	if o.misestimate {
		return newMisestimated(o.splits, o.records)
	}
	return newDataset(o.splits, o.records)
}

// planner plans the backfill job: one final plan holding every split of the
// data set. It runs only on the elected leader.
type planner struct {
	ds *dataset
}

// Fingerprint derives the job identity from the flags that shape the data set,
// so processes started with different -splits or -records refuse to share a
// job instead of mixing two plans.
func (p planner) Fingerprint() string {
	fp := fmt.Sprintf("backfill/v1 splits=%d records=%d", len(p.ds.splits), p.ds.records)
	if p.ds.misestimate {
		fp += " misestimate"
	}
	return fp
}

// Plan returns every split at once; the enumeration is complete (PlanFinal),
// so the job ends with AllComplete once every split is committed complete.
func (p planner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	plan := coordination.SplitPlan{Finality: coordination.PlanFinal}
	for i := range p.ds.splits {
		plan.Splits = append(plan.Splits, coordination.PlannedSplit{Spec: p.ds.spec(i)})
	}
	return plan, nil
}

// jobName derives the NATS job name (it suffixes the bucket names) from the
// fingerprint, so every process of one job lands on the same buckets.
func jobName(fingerprint string) string {
	h := fnv.New64a()
	h.Write([]byte(fingerprint))
	return fmt.Sprintf("backfill-%016x", h.Sum64())
}
