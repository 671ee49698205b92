package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// dataset is the generated data set the job backfills: records numbered
// 0..records-1, cut into splits. It is a pure function of the flags, so
// every process started with the same flags plans exactly the same job.
type dataset struct {
	records     int64
	splits      []lanes.Split[int64] // in record order
	misestimate bool
}

// newDataset cuts records into n ranges of uneven, deterministic sizes
// (most small, a few large: sizes span about one order of magnitude), each
// weighing its record count. With misestimate, one range in the middle
// holds a quarter of the records and the others share the rest evenly, but
// every split weighs the same, as a planner that cannot count the rows of
// a key range would. A range too small to hold a record is left out.
func newDataset(n int, records int64, misestimate bool) *dataset {
	share := make([]float64, n)
	if misestimate {
		for i := range share {
			share[i] = 0.75 / float64(max(1, n-1))
		}
		share[n/2] = 0.25
		if n == 1 {
			share[0] = 1
		}
	} else {
		rng := rand.New(rand.NewPCG(uint64(n), uint64(records)))
		var sum float64
		for i := range share {
			u := rng.Float64()
			share[i] = 0.2 + 2.0*u*u
			sum += share[i]
		}
		for i := range share {
			share[i] /= sum
		}
	}
	ds := &dataset{records: records, misestimate: misestimate}
	width := max(3, len(fmt.Sprint(n-1)))
	var start int64
	var cum float64
	for i := range n {
		cum += share[i]
		end := min(records, int64(cum*float64(records)+0.5))
		if i == n-1 {
			end = records
		}
		if end <= start {
			continue
		}
		weight := uint64(end - start)
		if misestimate {
			weight = uint64(max(1, records/int64(n)))
		}
		ds.splits = append(ds.splits, lanes.Split[int64]{
			ID:     coordination.SplitID(fmt.Sprintf("part-%0*d", width, i)),
			Range:  lanes.Range[int64]{Start: start, End: end},
			Weight: weight,
		})
		start = end
	}
	return ds
}

// datasetOf returns the data set the flags describe.
func datasetOf(o *options) *dataset { return newDataset(o.splits, o.records, o.misestimate) }

// planner returns the job's plan: every split at once, final.
func (ds *dataset) planner() coordination.Planner {
	p, err := lanes.Planner(ds.splits)
	if err != nil {
		panic(err) // the splits are valid by construction
	}
	return p
}

// holder returns the split whose range holds record n (the last split for
// a record past the end).
func (ds *dataset) holder(n int64) *lanes.Split[int64] {
	i := sort.Search(len(ds.splits), func(i int) bool { return ds.splits[i].Range.End > n })
	return &ds.splits[min(i, len(ds.splits)-1)]
}

// describe says how the records are split.
func (ds *dataset) describe() string {
	smallest, largest := ds.records, int64(0)
	for _, s := range ds.splits {
		n := s.Range.End - s.Range.Start
		smallest, largest = min(smallest, n), max(largest, n)
	}
	if ds.misestimate {
		return fmt.Sprintf("-misestimate: splits of %s to %s records, every one weighing %d: the planner cannot tell the one of a quarter of the records from the rest",
			human(smallest), human(largest), ds.splits[0].Weight)
	}
	return fmt.Sprintf("splits of %s to %s records, each weighing its record count", human(smallest), human(largest))
}

// jobName derives the job's name from its plan's fingerprint, so every
// process given the same flags joins the same job and a rerun resumes it.
func jobName(p coordination.Planner) string {
	h := fnv.New64a()
	h.Write([]byte(p.Fingerprint()))
	return fmt.Sprintf("backfill-%016x", h.Sum64())
}

// ledgerJob names the ledger of job: a job of its own on the same store.
func ledgerJob(job string) string { return job + "_ledger" }
