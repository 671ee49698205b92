package sqlscan_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/sources/sqlscan"
)

// The exactly-once property on a real PostgreSQL server: random tables
// (key kinds, gaps, sizes, batch sizes, split counts) copied by random
// fleets through random schedules of crashes, restarts, joins, stalled
// workers (their revocations are forced), runtime cuts, connections
// terminated by pg_terminate_backend and a killed server restarted: at the
// end of every schedule the sink holds every source row exactly once,
// counted by SQL.

// copySchedules is how many schedules run (SQLSCAN_SCHEDULES overrides).
const copySchedules = 30

// copyDeadline bounds how long a fleet may take to finish once the faults
// stopped.
const copyDeadline = 45 * time.Second

// propertyLease and propertyOpTimeout are the property fleets' lease and
// store-operation bound: twice fleetLease and its OpTimeout. At fleetLease
// (1 s, 300 ms) a machine at about twice CI's load (the suite's two halves
// at once, or three copies of a schedule beside a CPU hog: load 8 to 10)
// made pgstore writes outlast 300 ms, so every session ended about once a
// second and a schedule finished no split within copyDeadline (3 of 3 runs
// of SQLSCAN_SEED=212106; the library behaves as configured). At these
// values the same runs pass 3 of 3 in 12 s, and an idle machine runs the 30
// schedules faster (45 s against 57 s: fewer sessions end at a server
// restart).
const (
	propertyLease     = 2 * time.Second
	propertyOpTimeout = 600 * time.Millisecond
)

type copyStepKind int

const (
	stepCrash   copyStepKind = iota // Abort a worker; a new one starts in its place
	stepJoin                        // a new worker
	stepStall                       // a worker's batch writes block for a while: its drains cannot finish
	stepKill                        // pg_terminate_backend every other connection
	stepRestart                     // the server is killed (SIGKILL) and started again
	numCopySteps
)

var copyStepNames = []string{"crash", "join", "stall", "kill-connections", "server-restart"}

type copyStep struct {
	kind   copyStepKind
	worker int
	after  time.Duration
}

type copySchedule struct {
	kind, rows, step, batch, splits, workers int
	cuts, byRange                            bool
	steps                                    []copyStep
}

func (s copySchedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s keys, %d rows every %d, batches of %d, %d splits, %d workers, cuts %v, TransactRange %v:", keyKinds[s.kind].typ, s.rows, s.step, s.batch, s.splits, s.workers, s.cuts, s.byRange)
	for _, st := range s.steps {
		fmt.Fprintf(&b, " +%s %s(%d)", st.after, copyStepNames[st.kind], st.worker)
	}
	return b.String()
}

func drawCopySchedule(t *rapid.T) copySchedule {
	s := copySchedule{
		kind:    rapid.IntRange(0, len(keyKinds)-1).Draw(t, "kind"),
		rows:    rapid.IntRange(0, 3000).Draw(t, "rows"),
		step:    rapid.IntRange(1, 5).Draw(t, "step"),
		batch:   rapid.SampledFrom([]int{7, 16, 50, 128}).Draw(t, "batch"),
		splits:  rapid.IntRange(1, 8).Draw(t, "splits"),
		workers: rapid.IntRange(1, 3).Draw(t, "workers"),
		cuts:    rapid.Bool().Draw(t, "cuts"),
		byRange: rapid.Bool().Draw(t, "byRange"),
	}
	restart := rapid.IntRange(0, 4).Draw(t, "restart") == 0 // a server restart in one schedule in five
	for i := range rapid.IntRange(1, 4).Draw(t, "steps") {
		k := copyStepKind(rapid.IntRange(0, int(stepKill)).Draw(t, fmt.Sprint("step", i)))
		if restart && i == 0 {
			k = stepRestart
		}
		s.steps = append(s.steps, copyStep{kind: k, worker: rapid.IntRange(0, 7).Draw(t, fmt.Sprint("worker", i)), after: time.Duration(rapid.IntRange(20, 400).Draw(t, fmt.Sprint("after", i))) * time.Millisecond})
	}
	return s
}

func TestCopyExactlyOnceProperty(t *testing.T) {
	s := pgtest.Need(t, srv)
	if testing.Short() {
		t.Skip("real-time fleet schedules skipped in -short mode")
	}
	n := copySchedules
	if v, err := strconv.Atoi(os.Getenv("SQLSCAN_SCHEDULES")); err == nil {
		n = v
	}
	base := time.Now().UnixNano() % 1_000_000
	if v, err := strconv.ParseInt(os.Getenv("SQLSCAN_SEED"), 10, 64); err == nil {
		base = v
	}
	t.Logf("%d schedules from seed %d (SQLSCAN_SEED=%d reruns them)", n, base, base)
	gen := rapid.Custom(drawCopySchedule)
	// Two fleets at a time, one per core of CI's two: each one's server
	// restarts and terminated connections hit the other's too.
	for g := range 2 {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			t.Parallel()
			for i := g; i < n; i += 2 {
				sc := gen.Example(int(base) + i)
				if failure := runCopySchedule(t, s, sc); failure != "" {
					t.Fatalf("schedule %d (SQLSCAN_SEED=%d SQLSCAN_SCHEDULES=1 reruns it alone):\n%s\n%s", i, base+int64(i), sc, failure)
				}
			}
		})
	}
}

// runCopySchedule runs sc and returns what went wrong, or "".
func runCopySchedule(t *testing.T, s *pgtest.Server, sc copySchedule) string {
	ctx := t.Context()
	src, dst := makeTables(ctx, t, s, sc.kind, sc.rows, sc.step)
	j := &copyJob{s: s, job: pgtest.UniqueName("prop"), dst: dst, columns: []string{"k", "v"}, splits: sc.splits, byRange: sc.byRange,
		tbl: sqlscan.Table{Name: src, Key: "k", Kind: keyKinds[sc.kind].kind, Columns: []string{"k", "v"}, BatchSize: sc.batch}}
	if sc.cuts {
		j.cutEvery = 200 * time.Millisecond
	}
	j.lease, j.opTimeout = propertyLease, propertyOpTimeout
	var live []*copyWorker
	next := 0
	start := func() {
		next++
		live = append(live, j.start(t, fmt.Sprintf("w%d", next)))
	}
	for range sc.workers {
		start()
	}
	defer func() {
		for _, w := range live {
			w.unstall()
			w.crash()
		}
	}()
	for _, st := range sc.steps {
		time.Sleep(st.after) // the schedule's pace, not a wait for a condition
		w := live[st.worker%len(live)]
		switch st.kind {
		case stepCrash:
			w.crash()
			live = append(live[:st.worker%len(live)], live[st.worker%len(live)+1:]...)
			start()
		case stepJoin:
			start()
		case stepStall:
			w.setStall()
		case stepKill:
			_ = terminateBackends(ctx, s) // fails only while another schedule restarts the server
		case stepRestart:
			restarting.Lock()
			s.Kill()
			err := s.Start()
			restarting.Unlock()
			if err != nil {
				return fmt.Sprintf("restarting the server: %v", err)
			}
		}
	}
	for _, w := range live {
		w.unstall()
	}
	deadline := time.Now().Add(copyDeadline)
	waiting := live
	for finished := false; !finished; {
		for _, w := range waiting {
			if !w.wait(time.Until(deadline)) {
				return fmt.Sprintf("worker %s did not finish within %s of the last fault", w.id, copyDeadline)
			}
			switch {
			case w.err == nil:
				finished = true
			case strings.Contains(w.err.Error(), "store probe failed"):
				// A worker that started while the server restarted gives
				// up at startup (by design); the job goes on without it.
			default:
				return fmt.Sprintf("worker %s: %v", w.id, w.err)
			}
		}
		if !finished { // every worker gave up at startup: one more
			start()
			waiting = live[len(live)-1:]
		}
	}
	var missing, dup, extra int64
	var err error
	for try := 0; ; try++ { // through another schedule's server restart
		if missing, dup, extra, err = sinkCounts(ctx, s, src, dst, "k"); err == nil {
			break
		}
		if try == 100 {
			return err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if missing != 0 || dup != 0 || extra != 0 {
		return fmt.Sprintf("sink: %d rows missing, %d duplicated, %d extra; want 0, 0, 0", missing, dup, extra)
	}
	return ""
}

// restarting serializes the two fleets' server restarts.
var restarting sync.Mutex

// terminateBackends terminates every client connection but its own.
func terminateBackends(ctx context.Context, s *pgtest.Server) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'")
	return err
}
