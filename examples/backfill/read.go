package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// pace is how fast one lane reads: batch records every interval, like a
// reader paging through a remote table.
type pace struct {
	batch    int64
	interval time.Duration
}

// newPace spreads perSecond records per lane over 100ms batches (each batch
// is one ledger write).
func newPace(perSecond int64) pace {
	const tick = 100 * time.Millisecond
	if batch := perSecond * int64(tick) / int64(time.Second); batch >= 1 {
		return pace{batch: batch, interval: tick}
	}
	return pace{batch: 1, interval: time.Second / time.Duration(perSecond)}
}

// read is the worker's lanes.ReadFunc, the whole of its source: it reads
// the lane's records from lane.Next() in batches at the pace, claims each
// batch (its last record) before processing it, and processes it by
// recording it in the ledger. The kit does the rest: a claim that returns
// false (the range's end, a runtime cut, a drain, a stop) ends the read;
// an error is retried from the last claim.
func (w *worker) read(ctx context.Context, lane *lanes.Lane[int64]) error {
	t := w.begin(lane)
	defer w.end(lane)
	tick := time.NewTicker(w.pace.interval)
	defer tick.Stop()
	// A runtime cut lowers lane.End(), never below lane.Next().
	for pos := lane.Next(); pos < lane.End(); {
		select {
		case <-tick.C: // the batch's I/O
		case <-ctx.Done():
			return nil
		case <-w.dead: // a crashed process reads and writes nothing more
			<-ctx.Done()
			return nil
		}
		end := min(pos+w.pace.batch, lane.End())
		if !lane.Claim(end - 1) {
			return nil
		}
		if err := w.sink.record(t.key, delivery{Split: lane.Split(), Worker: w.name, Start: t.start, End: end}); err != nil {
			return err // the kit retries from the last claim
		}
		w.delivered.Add(end - pos)
		pos = end
	}
	return nil
}

// tenancy is one tenancy of a split on this worker: the lane the kit
// opened for it, its ledger key and where it started. The kit calls the
// read function again for the same lane after a cut or an error; a new
// lane of the split is a new tenancy.
type tenancy struct {
	lane  *lanes.Lane[int64]
	key   string // <split>.<worker>.<run>.<n>: no two tenancies of any process share one
	start int64
}

// begin marks lane as being read and returns its tenancy, starting one
// (and telling the fleet) when lane is new.
func (w *worker) begin(lane *lanes.Lane[int64]) *tenancy {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reading[lane.Split()] = true
	if t := w.tenancies[lane.Split()]; t != nil && t.lane == lane {
		return t
	}
	w.seq++
	t := &tenancy{lane: lane, key: fmt.Sprintf("%s.%s.%s.%d", lane.Split(), w.name, w.run, w.seq), start: lane.Next()}
	w.tenancies[lane.Split()] = t
	w.fleet.gained(w.name, lane.Split(), t.start, w.sink.previous(lane.Split(), t.key))
	return t
}

// end marks lane as not being read.
func (w *worker) end(lane *lanes.Lane[int64]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.reading, lane.Split())
}

// held returns the splits the worker is reading, in order.
func (w *worker) held() []coordination.SplitID {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.reading))
}
