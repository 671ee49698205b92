package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/examplekit"
)

// fleet turns the lanes' gains and ends into the event log: takeovers (told
// by the worker that takes over, from the ledger's record of the previous
// tenancy, so they show in every mode), drains and losses, and the recovery
// of a worker of this process crashed on purpose. The sources report to it;
// the display and the report read it. Safe for concurrent use.
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
	takeovers   int                           // gains after a crash or a forced move (not the second half of a move)
	moves       int                           // cooperative moves (drained hand-backs)
	losses      int                           // involuntary ends (revoked lanes)
}

// newFleet returns an empty fleet that writes its event lines to note.
func newFleet(note func(string)) *fleet {
	return &fleet{
		note:        note,
		holder:      make(map[coordination.SplitID]string),
		orphans:     make(map[coordination.SplitID]bool),
		recoveredBy: make(map[string]int),
	}
}

// gained records that worker started reading split at resume; prev is the
// split's previous tenancy in the ledger (nil for a fresh split).
func (f *fleet) gained(worker string, split coordination.SplitID, resume int64, prev *delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder[split] = worker
	if prev != nil {
		// A split resumed exactly where a drain stopped is the second half
		// of a move (counted by the drainer); a takeover follows a crash or
		// a forced move, and replays what came after the last commit.
		if prev.End > resume || f.orphans[split] {
			f.takeovers++
		}
		f.note(takeoverLine(worker, split, resume, *prev))
	}
	if f.orphans[split] {
		delete(f.orphans, split)
		f.recoveredBy[worker]++
		if len(f.orphans) == 0 {
			f.recoveredIn = time.Since(f.crashedAt)
			f.note(fmt.Sprintf("all %s of crashed %s recovered %.1fs after the crash", count(f.orphaned, "split"), f.victim, f.recoveredIn.Seconds()))
		}
	}
}

// takeoverLine describes worker resuming split at resume after prev, the
// tenancy that got furthest before.
func takeoverLine(worker string, split coordination.SplitID, resume int64, prev delivery) string {
	from := prev.Worker
	if from == worker {
		from = "its own earlier tenancy"
	}
	switch {
	case prev.End > resume:
		return fmt.Sprintf("%s took over %s from %s at record %d, its last commit; %s delivered after it will replay",
			worker, split, from, resume, count(prev.End-resume, "record"))
	case prev.End == resume:
		return fmt.Sprintf("%s resumed %s at record %d, exactly where %s stopped (no replay)", worker, split, resume, from)
	default:
		return fmt.Sprintf("%s resumed %s at record %d after %s", worker, split, resume, from)
	}
}

// ended records the end of worker's tenancy of a split.
func (f *fleet) ended(worker string, end laneEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder[end.split] == worker {
		delete(f.holder, end.split)
	}
	switch {
	case end.complete:
	case end.drained:
		f.moves++
		f.note(fmt.Sprintf("%s drained %s at record %d and handed it back (rebalance)", worker, end.split, end.acked))
	default:
		f.losses++
		f.note(fmt.Sprintf("%s lost %s at record %d; records after its last commit will replay", worker, end.split, end.acked))
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
// no worker of this process crashed).
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
	s := fmt.Sprintf("%s aborted holding %s; %d recovered", f.victim, count(f.orphaned, "split"), f.orphaned-len(f.orphans))
	if len(by) > 0 {
		s += " (" + strings.Join(by, ", ") + ")"
	}
	if len(f.orphans) == 0 && f.orphaned > 0 {
		s += fmt.Sprintf(" within %.1fs", f.recoveredIn.Seconds())
	}
	return s
}

// counts returns the takeovers, moves and losses seen so far.
func (f *fleet) counts() (takeovers, moves, losses int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.takeovers, f.moves, f.losses
}

// victimHolding returns the live worker (not yet crashed) holding the most
// splits, ties to the lowest index; nil if none holds any.
func victimHolding(workers []*worker) *worker {
	var best *worker
	for _, w := range workers {
		if w.crashed() || w.state.Load() != stateRunning {
			continue
		}
		if best == nil || w.src.held.Load() > best.src.held.Load() {
			best = w
		}
	}
	if best != nil && best.src.held.Load() == 0 {
		return nil
	}
	return best
}

// count renders n things with the noun in the right number: "1 split",
// "2 splits".
func count[N int | int64](n N, noun string) string { return examplekit.Count(n, noun) }
