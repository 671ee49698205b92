package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination"
)

// fleet turns the workers' gains into the event log: takeovers and moves
// (told by the worker that gains the split, from the ledger's record of
// the split's previous tenancy, so they show in every process), and the
// recovery of a worker of this process crashed on purpose. Safe for
// concurrent use.
type fleet struct {
	note func(string) // one line for the event log

	mu          sync.Mutex
	victim      string                            // guarded by mu: the crashed worker, "" before the crash
	crashedAt   time.Time                         // guarded by mu
	orphans     map[coordination.SplitID]bool     // guarded by mu: the victim's splits not yet re-gained
	orphaned    int                               // guarded by mu: how many splits the victim held
	recoveredIn time.Duration                     // guarded by mu: crash to the last orphan re-gained
	told        map[coordination.SplitID]delivery // guarded by mu: the previous tenancy each split's last gain was told after
	takeovers   int                               // guarded by mu: resumed from a last commit, replaying what came after it
	moves       int                               // guarded by mu: resumed exactly where the previous tenancy stopped (a drain, a clean stop)
}

// newFleet returns a fleet that writes its event lines to note.
func newFleet(note func(string)) *fleet {
	return &fleet{note: note, orphans: map[coordination.SplitID]bool{}, told: map[coordination.SplitID]delivery{}}
}

// gained records that worker started a tenancy of split at resume; prev is
// the split's tenancy that got furthest before (nil for a fresh split).
func (f *fleet) gained(worker string, split coordination.SplitID, resume int64, prev *delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev != nil && f.told[split] != *prev {
		f.told[split] = *prev // a tenancy that recorded nothing before the next one is told once
		from := prev.Worker
		if from == worker {
			from = "its own earlier tenancy"
		}
		switch {
		case prev.End > resume:
			f.takeovers++
			f.note(fmt.Sprintf("%s took over %s from %s at record %d, its last commit; %d records delivered after it will replay",
				worker, split, from, resume, prev.End-resume))
		case prev.End == resume:
			f.moves++
			f.note(fmt.Sprintf("%s resumed %s at record %d, exactly where %s stopped (no replay)", worker, split, resume, from))
		}
	}
	if f.orphans[split] {
		delete(f.orphans, split)
		if len(f.orphans) == 0 {
			f.recoveredIn = time.Since(f.crashedAt)
			f.note(fmt.Sprintf("all %d splits of crashed %s recovered %.1fs after the crash", f.orphaned, f.victim, f.recoveredIn.Seconds()))
		}
	}
}

// crashed records that worker crashed while reading the splits held.
func (f *fleet) crashed(worker string, held []coordination.SplitID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.victim, f.crashedAt, f.orphaned = worker, time.Now(), len(held)
	for _, split := range held {
		f.orphans[split] = true
	}
}

// crashSummary describes the crash and its recovery for the report ("" when
// no worker of this process crashed).
func (f *fleet) crashSummary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.victim == "" {
		return ""
	}
	s := fmt.Sprintf("%s aborted holding %d splits; %d recovered", f.victim, f.orphaned, f.orphaned-len(f.orphans))
	if len(f.orphans) == 0 && f.orphaned > 0 {
		s += fmt.Sprintf(" within %.1fs", f.recoveredIn.Seconds())
	}
	return s
}

// counts returns the takeovers and moves seen so far.
func (f *fleet) counts() (takeovers, moves int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.takeovers, f.moves
}

// joinIDs renders split ids as a comma-separated list.
func joinIDs(ids []coordination.SplitID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
