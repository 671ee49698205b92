package driver

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Pauser is an optional extension of [Reader] through which [Run] bounds
// what a store outage costs: when a lane's commits stop landing, Run pauses
// the lane's intake instead of letting it read on while nothing it reads can
// be committed, and resumes it once a commit of the lane lands. Without it
// Run cannot stop intake short of stopping the lane, and it logs one warning
// per run when a lane would have been paused. Like Reader, Run calls it
// from its own goroutine only.
//
// The bound, with the default [WithPauseAfter]: a lane stops reading at most
// one commit interval plus one OpTimeout after its first commit that did not
// land, so the records it read but could not commit (what a forced move of
// the split replays) are what it reads in about two commit intervals plus
// one OpTimeout, however long the outage lasts.
type Pauser interface {
	// PauseLanes stops reading the lanes at their next record boundary,
	// keeping them open: what they read stays acknowledged and committable.
	// It must not block on data. A paused lane may be stopped (StopLanes)
	// without being resumed.
	PauseLanes(lanes []LaneID)
	// ResumeLanes resumes reading paused lanes where they stopped. It must
	// not block on data.
	ResumeLanes(lanes []LaneID)
}

// lag is a lane whose acknowledged progress has not landed in the store:
// its last commit was deferred, or a round ended before trying it.
type lag struct {
	since  time.Time // the start of the first commit round whose attempt for the lane did not land
	tried  time.Time // the start of the last attempt, zero if never tried
	paused bool      // Run paused the lane's intake
}

// backlog tracks the lanes whose progress has not landed and pauses and
// resumes their intake (see [Pauser]). It belongs to Run's goroutine.
type backlog struct {
	after  time.Duration // how long a lane may read while its progress is not landing
	pauser Pauser        // nil when the source cannot pause
	warned bool          // the "cannot pause" warning was logged
	lags   map[PartitionID]*lag
}

// newBacklog returns an empty backlog over r, pausing after the given
// window when r is a [Pauser].
func newBacklog(r Reader, after time.Duration) *backlog {
	p, _ := r.(Pauser)
	return &backlog{after: after, pauser: p, lags: make(map[PartitionID]*lag)}
}

// order sorts ws for a commit round: partitions whose progress is landing
// first (by partition), then lagging ones, least recently tried first, so a
// round that stops at its first failure still tries every lane in turn.
func (b *backlog) order(ws []Watermark) {
	slices.SortStableFunc(ws, func(x, y Watermark) int {
		lx, ly := b.lags[x.Partition], b.lags[y.Partition]
		switch {
		case lx == nil && ly == nil:
			return cmp.Compare(x.Partition, y.Partition)
		case lx == nil:
			return -1
		case ly == nil:
			return 1
		}
		return cmp.Or(lx.tried.Compare(ly.tried), cmp.Compare(x.Partition, y.Partition))
	})
}

// failed records that the attempt started at now for p did not land.
func (b *backlog) failed(p PartitionID, now time.Time) {
	l := b.behind(p, now)
	l.tried = now
}

// behind records that p's progress has not landed as of now (its attempt
// failed or was skipped) and returns its lag.
func (b *backlog) behind(p PartitionID, now time.Time) *lag {
	l := b.lags[p]
	if l == nil {
		l = &lag{since: now}
		b.lags[p] = l
	}
	return l
}

// caughtUp forgets p's lag: its progress landed, or its tenancy ended. It
// returns whether p's intake was paused.
func (b *backlog) caughtUp(p PartitionID) bool {
	l := b.lags[p]
	delete(b.lags, p)
	return l != nil && l.paused
}

// due returns the earliest time a lagging, unpaused lane is to be paused,
// or zero when none is.
func (b *backlog) due() time.Time {
	var first time.Time
	for _, l := range b.lags {
		if at := l.since.Add(b.after); !l.paused && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// overdue returns, in partition order, the unpaused lagging partitions
// whose window has passed at now, and marks them paused.
func (b *backlog) overdue(now time.Time) []PartitionID {
	var out []PartitionID
	for _, p := range slices.Sorted(maps.Keys(b.lags)) {
		if l := b.lags[p]; !l.paused && !now.Before(l.since.Add(b.after)) {
			l.paused = true
			out = append(out, p)
		}
	}
	return out
}

// throttle pauses the intake of every lane whose progress has not landed
// for the window (see [Pauser]); without a Pauser it warns once instead.
func (l *loop) throttle() {
	l.prune()
	lanes := l.lanesOf(l.backlog.overdue(time.Now()))
	switch {
	case len(lanes) == 0:
	case l.backlog.pauser != nil:
		l.d.log.Warn("commits not landing; intake paused until one lands", "lanes", len(lanes), "after", l.backlog.after)
		l.backlog.pauser.PauseLanes(lanes)
	case !l.backlog.warned:
		l.backlog.warned = true
		l.d.log.Warn("commits not landing and the source cannot pause intake; implement driver.Pauser to bound what an outage replays", "lanes", len(lanes), "after", l.backlog.after)
	}
}

// resume resumes the intake of the paused lanes among parts, whose progress
// has landed.
func (l *loop) resume(parts []PartitionID) {
	lanes := l.lanesOf(parts)
	if len(lanes) == 0 || l.backlog.pauser == nil {
		return
	}
	l.d.log.Info("commits landing again; intake resumed", "lanes", len(lanes))
	l.backlog.pauser.ResumeLanes(lanes)
}

// prune forgets the lags of tenancies that take no more commits: their lanes
// were revoked or retired and are stopped, not resumed.
func (l *loop) prune() {
	for p := range l.backlog.lags {
		if t, ok := l.d.parts[p]; !ok || !t.committable() {
			l.backlog.caughtUp(p)
		}
	}
}

// lanesOf returns the open lanes of parts.
func (l *loop) lanesOf(parts []PartitionID) []LaneID {
	var lanes []LaneID
	for _, p := range parts {
		if t, ok := l.d.parts[p]; ok && t.opened && t.committable() {
			lanes = append(lanes, t.lane)
		}
	}
	return lanes
}
