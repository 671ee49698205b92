package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination"
)

// fleet follows which worker of this process holds which split, so the
// program can show a crashed worker's splits being recovered by the others
// and cooperative moves resuming without replay. The control loops report to
// it; the display and the report read it. Safe for concurrent use.
type fleet struct {
	note func(string) // one line for the event log

	mu          sync.Mutex
	holder      map[coordination.SplitID]string
	victim      string                        // the crashed worker, "" before the crash
	crashedAt   time.Time                     // when it crashed
	orphans     map[coordination.SplitID]bool // the victim's splits not yet re-gained
	orphaned    int                           // how many splits the victim held
	recoveredBy map[string]int                // re-gained orphans per worker
	recoveredIn time.Duration                 // crash to the last orphan re-gained
	handedOff   map[coordination.SplitID]bool // drained and not yet re-gained
	moves       int                           // cooperative moves (drained hand-backs)
	losses      int                           // involuntary ends (LanesRevoked)
}

// newFleet returns an empty fleet that writes its event lines to note.
func newFleet(note func(string)) *fleet {
	return &fleet{
		note:        note,
		holder:      make(map[coordination.SplitID]string),
		orphans:     make(map[coordination.SplitID]bool),
		recoveredBy: make(map[string]int),
		handedOff:   make(map[coordination.SplitID]bool),
	}
}

// gained records that worker opened a lane on split, reading from resume.
func (f *fleet) gained(worker string, split coordination.SplitID, resume int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder[split] = worker
	switch {
	case f.orphans[split]:
		delete(f.orphans, split)
		f.recoveredBy[worker]++
		recovered := f.orphaned - len(f.orphans)
		f.note(fmt.Sprintf("%s took over %s from crashed %s, resuming at record %d from its last commit (%d/%d recovered)",
			worker, split, f.victim, resume, recovered, f.orphaned))
		if len(f.orphans) == 0 {
			f.recoveredIn = time.Since(f.crashedAt)
			f.note(fmt.Sprintf("all %d splits of %s recovered %.1fs after the crash", f.orphaned, f.victim, f.recoveredIn.Seconds()))
		}
	case f.handedOff[split]:
		delete(f.handedOff, split)
		f.note(fmt.Sprintf("%s resumed %s at record %d, where the drain cut it (no replay)", worker, split, resume))
	}
}

// lost records an involuntary end of worker's tenancy of a split.
func (f *fleet) lost(worker string, end laneEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder[end.split] == worker {
		delete(f.holder, end.split)
	}
	f.losses++
	f.note(fmt.Sprintf("%s lost %s at record %d; records after its last commit will replay", worker, end.split, end.acked))
}

// retired records a clean end: completed, or handed off after a drain.
func (f *fleet) retired(worker string, end laneEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder[end.split] == worker {
		delete(f.holder, end.split)
	}
	if end.acked < end.records.End {
		f.moves++
		f.handedOff[end.split] = true
		f.note(fmt.Sprintf("%s drained %s at record %d and handed it back (rebalance)", worker, end.split, end.acked))
	}
}

// crashed records that worker crashed and returns the splits it held.
func (f *fleet) crashed(worker string) []coordination.SplitID {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.victim = worker
	f.crashedAt = time.Now()
	var held []coordination.SplitID
	for split, w := range f.holder {
		if w == worker {
			held = append(held, split)
			f.orphans[split] = true
			delete(f.holder, split)
		}
	}
	slices.Sort(held)
	f.orphaned = len(held)
	return held
}

// crashSummary describes the crash and its recovery for the report ("" when
// no worker crashed).
func (f *fleet) crashSummary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.victim == "" {
		return ""
	}
	var by []string
	for w, n := range f.recoveredBy {
		by = append(by, fmt.Sprintf("%s %d", w, n))
	}
	slices.Sort(by)
	s := fmt.Sprintf("%s aborted holding %d splits; %d recovered", f.victim, f.orphaned, f.orphaned-len(f.orphans))
	if len(by) > 0 {
		s += " (" + strings.Join(by, ", ") + ")"
	}
	if len(f.orphans) == 0 && f.orphaned > 0 {
		s += fmt.Sprintf(" within %.1fs", f.recoveredIn.Seconds())
	}
	return s
}

// victimHolding returns the live worker (not yet crashed) holding the most
// splits, ties to the lowest index; nil if none holds any.
func victimHolding(workers []*worker) *worker {
	var best *worker
	for _, w := range workers {
		if w.crashed() || w.state.Load() != stateRunning {
			continue
		}
		if best == nil || w.held.Load() > best.held.Load() {
			best = w
		}
	}
	if best != nil && best.held.Load() == 0 {
		return nil
	}
	return best
}
