package driver

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/spate-go/coordination"
)

// Driver runs the source-side choreography over a coordination.Coordinator:
// it turns the coordinator's events into lanes of a [Source], commits their
// watermarks with the right triage, drains revoked splits, reports poison,
// and leaves the job cleanly.
//
// A Driver is synchronous: it does no I/O of its own, starts no goroutines
// and must be used by one goroutine (the embedder's control loop). Only
// [Driver.PollEvents] blocks, parked on the [Driver.Waker] for at most its
// timeout.
type Driver struct {
	c     coordination.Coordinator
	src   Source
	log   *slog.Logger
	waker *coordination.Waker

	drainOnStall bool

	started bool
	shut    bool

	lastLane      LaneID      // last minted; 0 is never used
	lastPartition PartitionID // last minted; 0 is never used

	held  map[coordination.SplitID]*tenancy // the split's current, non-retired tenancy
	parts map[PartitionID]*tenancy          // every tenancy not yet pruned, retired ones included

	toOpen  []*tenancy // staged gains, in gain order
	added   []Lane     // opened, not yet announced by LanesAdded
	lost    []LaneID   // staged for LanesRevoked
	retired []LaneID   // staged for LanesRetired

	asks       map[coordination.SplitID]coordination.CutRequested // cut requests not yet acted on
	uncuttable map[coordination.SplitID]bool                      // splits whose cut the coordinator refused for good
	asked      bool                                               // this poll staged a cut request: it returns without parking

	everHeld    bool                  // a Gained ever created a tenancy
	complete    bool                  // AllComplete seen
	stalled     *coordination.Stalled // Stalled seen
	stallWarned bool                  // the WithDrainOnStall warning was logged
}

// New returns a Driver for coordinator c and source src. It creates the
// Driver's Waker and hands it to c.SetWaker and, with [WithStop], the stop
// channel to c.SetStop, so New must be called before c is started. It does
// not start c: call [Driver.Start].
func New(c coordination.Coordinator, src Source, opts ...Option) *Driver {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	d := &Driver{
		c:            c,
		src:          src,
		log:          loggerFor(c, o.logger),
		waker:        coordination.NewWaker(),
		drainOnStall: o.drainOnStall,
		held:         make(map[coordination.SplitID]*tenancy),
		parts:        make(map[PartitionID]*tenancy),
	}
	c.SetWaker(d.waker)
	if o.stop != nil {
		c.SetStop(o.stop)
	}
	return d
}

// Waker returns the waker the driver parks on. The coordinator wakes it when
// it has events; lanes wake it on end of input and on poison (it is also
// passed to them in [Opening]). Waking it from any goroutine ends a park.
func (d *Driver) Waker() *coordination.Waker { return d.waker }

// Start starts the coordinator with planner p and returns its error
// unchanged. A second Start returns Fatal "driver started twice"; a Start
// after Shutdown returns Fatal "driver is shut down". A failed Start leaves
// the driver unstarted.
func (d *Driver) Start(p coordination.Planner) error {
	switch {
	case d.shut:
		return errShutDown()
	case d.started:
		return fatal("driver started twice")
	}
	if err := d.c.Start(p); err != nil {
		return err
	}
	d.started = true
	return nil
}

// Assignments returns the held splits that have an open lane, sorted by split
// id. It returns nil before Start and after Shutdown.
func (d *Driver) Assignments() []Assignment {
	var out []Assignment
	for id, t := range d.held {
		if t.opened {
			out = append(out, Assignment{Split: id, Lane: t.lane, Partition: t.partition})
		}
	}
	slices.SortFunc(out, func(a, b Assignment) int { return strings.Compare(string(a.Split), string(b.Split)) })
	return out
}

// usable returns the error a call other than Start, Shutdown and Assignments
// gets in the current lifecycle state, or nil.
func (d *Driver) usable() error {
	switch {
	case d.shut:
		return errShutDown()
	case !d.started:
		return fatal("driver used before Start")
	}
	return nil
}

// fatal returns a Fatal *coordination.Error with reason.
func fatal(reason string) error {
	return &coordination.Error{Kind: coordination.Fatal, Reason: reason}
}

func errShutDown() error { return fatal("driver is shut down") }
