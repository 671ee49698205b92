package testkit

import (
	"slices"
	"sync"

	"github.com/spate-go/coordination"
)

// NewScripted returns a [ScriptedCoordinator] whose events and outcomes the
// paired [CoordinatorScript] decides. Both share one mutex-guarded state, so
// the script may be used from any goroutine while the coordinator is driven
// from another. There is no store and no clock: everything is deterministic.
func NewScripted() (*ScriptedCoordinator, *CoordinatorScript) {
	st := &scriptState{
		commitOutcomes: make(map[coordination.SplitID][]coordination.ErrorKind),
		failOutcomes:   make(map[coordination.SplitID][]coordination.ErrorKind),
		cutOutcomes:    make(map[coordination.SplitID][]coordination.ErrorKind),
		epochs:         make(map[coordination.SplitID]coordination.LeaseEpoch),
		counters:       make(map[coordination.SplitID]uint64),
		remaining:      make(map[coordination.SplitID]Estimate),
	}
	return &ScriptedCoordinator{st: st}, &CoordinatorScript{st: st}
}

// ScriptedCoordinator is a coordination.Coordinator whose events and outcomes
// are scripted by the paired [CoordinatorScript]; build both with
// [NewScripted]. It is safe for concurrent use.
//
// It follows the seam's lifecycle rules: calls before Start are refused with
// Fatal errors and change nothing, a second Start is Fatal, and after Depart
// every method returns Fatal "coordinator departed" except Poll, which
// returns nothing, and SetWaker and SetStop, which do nothing. It tracks no
// ownership: a commit of any split succeeds unless an outcome was scripted.
type ScriptedCoordinator struct {
	st *scriptState
}

// scriptState is everything the coordinator and the script share; every
// field is guarded by mu.
type scriptState struct {
	mu sync.Mutex

	waker    *coordination.Waker
	started  bool
	departed bool
	planner  coordination.Planner // taken once by TakePlanner

	queue []coordination.Event // events queued since the last Poll

	commitOutcomes map[coordination.SplitID][]coordination.ErrorKind // FIFO per split
	failOutcomes   map[coordination.SplitID][]coordination.ErrorKind // FIFO per split
	cutOutcomes    map[coordination.SplitID][]coordination.ErrorKind // FIFO per split

	epochs    map[coordination.SplitID]coordination.LeaseEpoch // of the last scripted Gain
	counters  map[coordination.SplitID]uint64                  // cuts landed per split
	remaining map[coordination.SplitID]Estimate                // the last ReportRemaining per split
	cuts      []CutRecord

	commits         []coordination.Commit
	finalCommits    [][]coordination.Commit
	failed          []FailRecord
	released        []coordination.SplitID
	releasedDrained []coordination.SplitID
	declined        []coordination.SplitID
	departedWith    []coordination.SplitID
}

var _ coordination.Cutter = (*ScriptedCoordinator)(nil)

// errDeparted is returned by every call after Depart.
func errDeparted() error {
	return &coordination.Error{Kind: coordination.Fatal, Reason: "coordinator departed"}
}

// errBeforeStart is returned by the writing calls before Start.
func errBeforeStart() error {
	return &coordination.Error{Kind: coordination.Fatal, Reason: "coordinator used before Start"}
}

// scripted builds the error a popped outcome returns.
func scripted(kind coordination.ErrorKind, id coordination.SplitID) error {
	return &coordination.Error{Kind: kind, Reason: "scripted " + kind.String() + " for split " + string(id)}
}

// usable reports why a call other than Poll, Start, SetWaker, SetStop or
// Depart cannot run now, or nil. Call with mu held.
func (st *scriptState) usable() error {
	switch {
	case st.departed:
		return errDeparted()
	case !st.started:
		return errBeforeStart()
	}
	return nil
}

// pop removes and returns the first scripted outcome of id in q, if any.
// Call with mu held.
func pop(q map[coordination.SplitID][]coordination.ErrorKind, id coordination.SplitID) (coordination.ErrorKind, bool) {
	kinds := q[id]
	if len(kinds) == 0 {
		return 0, false
	}
	if len(kinds) == 1 {
		delete(q, id)
	} else {
		q[id] = kinds[1:]
	}
	return kinds[0], true
}

// SetWaker records w as the waker every queueing call of the script wakes.
// As on a real coordinator, a call after Start (or after Depart) is ignored.
func (c *ScriptedCoordinator) SetWaker(w *coordination.Waker) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.started || c.st.departed {
		return
	}
	c.st.waker = w
}

// SetStop is accepted and has no effect: nothing in a scripted coordinator
// ever waits.
func (c *ScriptedCoordinator) SetStop(<-chan struct{}) {}

// Start records the planner and returns nil. A second Start returns Fatal
// "Start called twice"; a Start after Depart returns Fatal "coordinator
// departed". Neither changes anything.
func (c *ScriptedCoordinator) Start(p coordination.Planner) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	switch {
	case c.st.departed:
		return errDeparted()
	case c.st.started:
		return &coordination.Error{Kind: coordination.Fatal, Reason: "Start called twice"}
	}
	c.st.started = true
	c.st.planner = p
	return nil
}

// Poll returns every event queued since the previous Poll as one batch, in
// queue order, or nil when there is none. It never blocks. Before Start it
// returns Fatal "Poll called before Start" and keeps the queue; after Depart
// it returns (nil, nil).
func (c *ScriptedCoordinator) Poll() ([]coordination.Event, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	switch {
	case c.st.departed:
		return nil, nil
	case !c.st.started:
		return nil, &coordination.Error{Kind: coordination.Fatal, Reason: "Poll called before Start"}
	}
	batch := c.st.queue
	c.st.queue = nil
	return batch, nil
}

// Commit pops the split's next scripted commit outcome and returns it as an
// error, or records the commit and returns nil when none is scripted. Failed
// commits are not recorded.
func (c *ScriptedCoordinator) Commit(split coordination.SplitID, progress coordination.SplitProgress) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if err := c.st.usable(); err != nil {
		return err
	}
	if kind, ok := pop(c.st.commitOutcomes, split); ok {
		return scripted(kind, split)
	}
	c.st.commits = append(c.st.commits, coordination.Commit{Split: split, Progress: cloneProgress(progress)})
	return nil
}

// CommitFinal returns one result per entry, in order. Each entry pops its
// split's next scripted commit outcome, exactly as Commit does. The call
// records one batch holding its successful entries (empty when all failed);
// final entries never appear in Commits.
func (c *ScriptedCoordinator) CommitFinal(commits []coordination.Commit) []error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	results := make([]error, len(commits))
	if err := c.st.usable(); err != nil {
		for i := range results {
			results[i] = err
		}
		return results
	}
	batch := make([]coordination.Commit, 0, len(commits))
	for i, cm := range commits {
		if kind, ok := pop(c.st.commitOutcomes, cm.Split); ok {
			results[i] = scripted(kind, cm.Split)
			continue
		}
		batch = append(batch, coordination.Commit{Split: cm.Split, Progress: cloneProgress(cm.Progress)})
	}
	c.st.finalCommits = append(c.st.finalCommits, batch)
	return results
}

// Fail records the call (a scripted refusal is recorded too), then pops the split's next scripted
// fail outcome and returns it as an error, or nil when none is scripted.
func (c *ScriptedCoordinator) Fail(split coordination.SplitID, epoch coordination.LeaseEpoch, reason string) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if err := c.st.usable(); err != nil {
		return err
	}
	c.st.failed = append(c.st.failed, FailRecord{Split: split, Epoch: epoch, Reason: reason})
	if kind, ok := pop(c.st.failOutcomes, split); ok {
		return scripted(kind, split)
	}
	return nil
}

// Release records the splits and returns nil. Like every call but Start,
// Poll, SetWaker, SetStop and Depart, before Start it returns Fatal
// "coordinator used before Start" and after Depart Fatal "coordinator
// departed", recording nothing.
func (c *ScriptedCoordinator) Release(splits ...coordination.SplitID) error {
	return c.record(&c.st.released, splits...)
}

// ReleaseDrained records the splits, in a list kept apart from Release's so
// a test can tell a drain hand-back from a plain release, and returns nil.
func (c *ScriptedCoordinator) ReleaseDrained(splits ...coordination.SplitID) error {
	return c.record(&c.st.releasedDrained, splits...)
}

// DeclineRevoke records the split and returns nil.
func (c *ScriptedCoordinator) DeclineRevoke(split coordination.SplitID) error {
	return c.record(&c.st.declined, split)
}

// record appends splits to the recorded id list *list, unless the
// coordinator is not usable now (before Start, after Depart).
func (c *ScriptedCoordinator) record(list *[]coordination.SplitID, splits ...coordination.SplitID) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if err := c.st.usable(); err != nil {
		return err
	}
	*list = append(*list, splits...)
	return nil
}

// Depart records the departure and the ids it was given and returns nil; it
// is valid before Start. A second Depart returns Fatal "coordinator
// departed" and records nothing.
func (c *ScriptedCoordinator) Depart(held ...coordination.SplitID) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.departed {
		return errDeparted()
	}
	c.st.departed = true
	c.st.departedWith = slices.Clone(held)
	c.st.queue = nil
	return nil
}

// cloneProgress copies p so a recorded commit is not aliased by its caller.
func cloneProgress(p coordination.SplitProgress) coordination.SplitProgress {
	p.State = slices.Clone(p.State)
	return p
}
