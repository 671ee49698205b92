package main

import (
	"context"
	"time"
)

// idleTick is how often the tail-idle meter samples the lanes.
const idleTick = 50 * time.Millisecond

// idleMeter measures the report's "tail idle": the lane-seconds this
// process's running workers left idle while records of the job remained to
// be delivered, from the first delivery on (so the start-up, the same with
// or without runtime splits, does not count). An idle lane is a slot of
// -lanes with no reader reading. Only in-process workers count, and their
// deliveries (duplicates included) decide when nothing remains.
type idleMeter struct {
	workers []*worker
	lanes   int
	planned int64         // records to deliver in this run (this process's deliveries count)
	idle    time.Duration // lane-time; set when run returns
}

// run samples until done closes or ctx ends.
func (m *idleMeter) run(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(idleTick)
	defer t.Stop()
	started := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		var delivered int64
		reading, running := int64(0), 0
		for _, w := range m.workers {
			delivered += w.src.delivered.Load()
			if w.state.Load() == stateRunning {
				running++
				reading += w.src.reading.Load()
			}
		}
		if delivered == 0 && !started {
			continue
		}
		started = true
		if delivered >= m.planned {
			return
		}
		m.idle += time.Duration(max(0, int64(running*m.lanes)-reading)) * idleTick
	}
}
