package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// tally counts, across every worker of this process, what the lanes did: the
// live progress line and the kill and late-join thresholds read it. The
// verification does not: it reads the sink's own counts, which also cover
// other processes. Safe for concurrent use.
type tally struct {
	written  atomic.Int64 // rows inserted into the sink
	absorbed atomic.Int64 // rows the sink already had (replays)
	skipped  atomic.Int64 // rows not replayed because the sink's watermark was ahead
	cuts     atomic.Int64 // runtime cuts this process's lanes made (TrySplit ok)

	mu  sync.Mutex
	out io.Writer // the event log
}

// note writes one line to the event log.
func (t *tally) note(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.out, line)
}
