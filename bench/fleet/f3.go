package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spate-go/coordination/store"
)

// figureF3 lets the settled F2 fleet idle for c.idle and reports the store
// writes each worker made per heartbeat (LeaseDuration/3) and the whole
// process's CPU as a share of one core. The baseline is the same process
// with the fleet aborted: the server holding the same data and nothing
// else, over half the window.
func figureF3(ctx context.Context, e *env, c config, cl *claimed) (string, error) {
	f := cl.f
	beat := f.env.lease / 3
	if err := f.waitHeld(ctx, c.splits, beat); err != nil {
		return "", err
	}
	before := make([]tally, len(f.workers))
	for i, w := range f.workers {
		before[i] = w.st.snapshot()
	}
	pg0, err := e.pgIdle(ctx, f.job)
	if err != nil {
		return "", err
	}
	cpu0, wall0 := cpuTime(), time.Now()
	if err := idle(ctx, c.idle); err != nil {
		return "", err
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	pg, err := e.pgIdle(ctx, f.job)
	if err != nil {
		return "", err
	}
	beats := float64(wall) / float64(beat)
	var per []float64
	var sum tally
	var list []string
	for i, w := range f.workers {
		d := w.st.snapshot().sub(before[i])
		per = append(per, float64(d.writes())/beats)
		mark := ""
		if int64(i)+1 == f.publisher.Load() {
			mark = "*"
		}
		list = append(list, fmt.Sprintf("%s%s %.2f", w.id, mark, per[i]))
		for ks := range d.calls {
			for o := range d.calls[ks] {
				sum.calls[ks][o] += d.calls[ks][o]
			}
		}
	}
	for _, w := range f.workers {
		w.stop()
	}
	base := max(c.idle/2, time.Second)
	bpg0, err := e.pgIdle(ctx, f.job)
	if err != nil {
		return "", err
	}
	bcpu0, bwall0 := cpuTime(), time.Now()
	if err := idle(ctx, base); err != nil {
		return "", err
	}
	bcpu, bwall := cpuTime()-bcpu0, time.Since(bwall0)
	bpg, err := e.pgIdle(ctx, f.job)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("F3 idle %s, %d workers x %d splits, heartbeat %s: writes/worker/heartbeat min %.2f max %.2f [%s] (* published the plan) (fleet: %s) (target 1, +1 on the leader); CPU %.1f %% of one core (target <= 5 %%); server alone %.1f %%",
		secs(wall), len(f.workers), c.splits/max(len(f.workers), 1), beat, slices.Min(per), slices.Max(per), strings.Join(list, ", "), breakdown(sum, beats),
		pct(cpu, wall), pct(bcpu, bwall))
	if e.pg != nil {
		line += pg.sub(pg0).String(wall) + fmt.Sprintf("; PostgreSQL server with no workers %.1f %%", pct(bpg.cpu-bpg0.cpu, bwall))
	}
	return line, nil
}

// idle waits d, or returns a timeout if ctx ends first.
func idle(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &timeoutError{what: "the idle window", after: d, progress: "interrupted"}
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pct is cpu as a percentage of one core over wall.
func pct(cpu, wall time.Duration) float64 { return 100 * float64(cpu) / float64(wall) }

// breakdown lists the non-zero write counts per heartbeat by keyspace and
// operation, plus reads.
func breakdown(t tally, beats float64) string {
	var parts []string
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		for o := range numOps {
			if n := t.calls[ks][o]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %s %.1f", ks, o, float64(n)/beats))
			}
		}
	}
	if len(parts) == 0 {
		return "no calls"
	}
	return strings.Join(parts, ", ") + " per heartbeat"
}

// pgIdleReading is what the PostgreSQL server has spent so far: its CPU and
// the rows written and removed in a job's tables.
type pgIdleReading struct {
	cpu  time.Duration
	rows rowStats
}

// pgIdle reads the server's CPU and job's row counters; nothing on NATS
// (its server runs in this process and counts in the process CPU). The
// statistics are flushed about once a second: the reading waits that out.
func (e *env) pgIdle(ctx context.Context, job string) (pgIdleReading, error) {
	if e.pg == nil {
		return pgIdleReading{}, nil
	}
	if err := idle(ctx, 1100*time.Millisecond); err != nil {
		return pgIdleReading{}, err
	}
	rows, err := e.pg.rows(ctx, job)
	return pgIdleReading{cpu: e.pg.srv.CPUTime(), rows: rows}, err
}

func (r pgIdleReading) sub(o pgIdleReading) pgIdleReading {
	return pgIdleReading{cpu: r.cpu - o.cpu, rows: r.rows.sub(o.rows)}
}

// String renders the idle cost over wall, scaled to an hour.
func (r pgIdleReading) String(wall time.Duration) string {
	perHour := float64(time.Hour) / float64(wall)
	return fmt.Sprintf("; PostgreSQL server CPU %.1f %% of one core; rows of the job's tables per hour: %.0f written (entries and change log), %.0f removed (sweeps and change-log pruning)",
		pct(r.cpu, wall), float64(r.rows.written)*perHour, float64(r.rows.removed)*perHour)
}
