package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/coordctl"
	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
)

// The job: 3 workers divide 12 splits of 1,200 rows; each lane reads 10
// rows every 50ms (200 rows/s), so a split takes 6 s and the job about
// 9 s on an idle machine. The timing is the example's (examples/backfill):
// a 3 s lease, 1 s OpTimeout, commits every 250ms.
const (
	workers      = 3
	splits       = 12
	rowsPerSplit = 1200
	totalRows    = splits * rowsPerSplit
	batch        = 10
	tick         = 50 * time.Millisecond
	rowsPerSec   = batch * int64(time.Second/tick)

	leaseDuration  = 3 * time.Second
	opTimeout      = time.Second
	commitInterval = 250 * time.Millisecond

	outage     = 2 * time.Second  // how long the server (or node) stays down
	jobTimeout = 90 * time.Second // the whole job, outage included

	// auditHistory is the revisions kept per key, so that coordctl audit
	// sees every write of a split's life (about 30 here).
	auditHistory = 64
)

// replayBound is the most rows one tenancy may replay of its predecessor's:
// the bound driver.Pauser states (one commit interval, the pause window,
// which defaults to one commit interval, and one OpTimeout of reading
// beyond the last landed commit), plus one batch a reader has in hand and
// one commit interval of slack for a loaded machine.
const replayBound = rowsPerSec*int64(3*commitInterval+opTimeout)/int64(time.Second) + batch

// workerConfig is the coordinator configuration of worker name.
func workerConfig(name string, log *slog.Logger) coordination.Config {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = name
	cfg.LeaseDuration = leaseDuration
	cfg.OpTimeout = opTimeout
	cfg.ReplanInterval = leaseDuration
	cfg.ReconcileInterval = 2 * opTimeout
	cfg.DrainDeadline = 2 * opTimeout
	cfg.RebalanceDelay = 0
	cfg.Logger = log
	return cfg
}

// deployment is the store a job runs on: how a worker opens it (each
// worker and the progress watch open their own handle, with their own
// connections) and coordctl's connection flags for it.
type deployment struct {
	open func() (store.Store, error)
	ctl  []string // coordctl's flags naming the store and the job
}

// natsDeployment runs the job on the NATS servers of cfg.
func natsDeployment(cfg natsstore.Config) deployment {
	return deployment{
		open: func() (store.Store, error) { return natsstore.New(cfg, leaseDuration) },
		ctl:  []string{"-nats", strings.Join(cfg.Servers, ","), "-job", cfg.Job},
	}
}

// job is one run of the job against a deployment.
type job struct {
	t    *testing.T
	dep  deployment
	out  *ledger
	log  *slog.Logger
	logs *syncBuffer
	fp   uint64

	results chan error // one per worker
	srcs    []*source
}

// syncBuffer collects the job's log for a failure report.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startJob starts the workers, each with its own store handle (its own
// connections), engine and coordinator, run by driver.Run until the job
// completes.
func startJob(t *testing.T, dep deployment) *job {
	t.Helper()
	logs := &syncBuffer{}
	p := rangePlanner{splits: splits, rows: rowsPerSplit}
	j := &job{t: t, dep: dep, out: newLedger(), logs: logs, fp: protocol.Fingerprint(p.Fingerprint()),
		log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})), results: make(chan error, workers)}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after cancel: every worker has returned
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	t.Cleanup(cancel)
	for i := range workers {
		name := fmt.Sprintf("w%d", i)
		st, err := dep.open()
		if err != nil {
			t.Fatal(err)
		}
		engine, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		c, err := actors.Spawn(engine, st, workerConfig(name, j.log))
		if err != nil {
			t.Fatal(err)
		}
		src := newSource(name, rowsPerSplit, batch, tick, j.out)
		j.srcs = append(j.srcs, src)
		wg.Go(func() {
			err := driver.Run(ctx, c, src, driver.WithPlanner(p), driver.WithCommitInterval(commitInterval),
				driver.WithLogger(j.log.With("driver", name)))
			src.readers.Wait()
			j.results <- joinErr(name, err, st.Close())
		})
	}
	return j
}

// joinErr names worker in a run's error and its store's close error.
func joinErr(worker string, run, closeErr error) error {
	switch {
	case run == nil && closeErr == nil:
		return nil
	case closeErr == nil:
		return fmt.Errorf("worker %s: %w", worker, run)
	}
	return fmt.Errorf("worker %s: run %v; close %w", worker, run, closeErr)
}

// waitDelivered waits until the workers have delivered at least frac of
// the job.
func (j *job) waitDelivered(frac float64) {
	j.t.Helper()
	waitFor(j.t, jobTimeout, fmt.Sprintf("%.0f%% of the job delivered", 100*frac), func() bool {
		return float64(j.out.delivered()) >= frac*totalRows
	})
}

// finish waits for every worker's Run and fails the test on any error.
func (j *job) finish() {
	j.t.Helper()
	for range workers {
		if err := <-j.results; err != nil {
			j.t.Errorf("%v", err)
		}
	}
}

// waitFor polls cond every 20ms until it holds, failing the test after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling an explicit condition
	}
}

// progressWatch follows every progress record of the job through its own
// store connection, rewatching after each break (the snapshot of a rewatch
// is checked too, so a store that came back older is caught), and records
// every watermark that decreased and every completed split that came back
// uncompleted.
type progressWatch struct {
	mu         sync.Mutex
	last       map[string]protocol.ProgressRecord
	violations []string
	events     int
	rewatches  int
	stop       context.CancelFunc
	done       chan struct{}
	ready      chan struct{} // closed at the end of the first snapshot
	watching   sync.Once
}

// watchReady bounds the progress watch's first snapshot: the watch is
// started with the job, while the workers are provisioning its buckets,
// and must not have to wait out a request to a forming stream (10 s, the
// natsstore watch's setup timeout: 10.1 s before the fix). A healthy
// first snapshot takes well under 1 s alone, but up to 6.8 s with the
// whole suite run twice at once on two cores (twice CI's load), so the
// bound sits between the two.
const watchReady = 9 * time.Second

// watchProgress starts the watch and returns once its first snapshot is
// in; stop it with finish.
func (j *job) watchProgress() *progressWatch {
	st, err := j.dep.open()
	if err != nil {
		j.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pw := &progressWatch{last: map[string]protocol.ProgressRecord{}, stop: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	j.t.Cleanup(func() { cancel(); <-pw.done })
	go func() {
		defer close(pw.done)
		defer func() { _ = st.Close() }()
		for ctx.Err() == nil {
			pw.follow(ctx, st, j.fp)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // the store is down: try again
			}
		}
	}()
	start := time.Now()
	select {
	case <-pw.ready:
	case <-time.After(jobTimeout):
		j.t.Fatal("the progress watch did not complete its snapshot")
	}
	if took := time.Since(start); took > watchReady {
		j.t.Errorf("the progress watch's first snapshot took %s, want at most %s", took.Round(time.Millisecond), watchReady)
	}
	return pw
}

// follow watches until the watch breaks or ctx ends.
func (pw *progressWatch) follow(ctx context.Context, st store.Store, fp uint64) {
	w, err := st.Watch(ctx, store.Durable, protocol.PrefixProgress)
	if err != nil {
		return
	}
	defer w.Stop()
	pw.mu.Lock()
	pw.rewatches++
	pw.mu.Unlock()
	for ev := range w.Events() {
		if ev.Kind == store.SnapshotDone {
			pw.watching.Do(func() { close(pw.ready) })
		}
		if ev.Kind != store.Put {
			continue
		}
		r, err := protocol.DecodeProgress(ev.Entry.Key, ev.Entry.Value, fp)
		pw.mu.Lock()
		pw.events++
		if err != nil {
			pw.violations = append(pw.violations, fmt.Sprintf("%s: %v", ev.Entry.Key, err))
		} else {
			pw.check(ev.Entry.Key, ev.Entry.Revision, r)
		}
		pw.mu.Unlock()
	}
}

// check compares r, seen at rev, with the last record of key.
func (pw *progressWatch) check(key string, rev store.Revision, r protocol.ProgressRecord) {
	prev, seen := pw.last[key]
	if seen && prev.Watermark != nil && (r.Watermark == nil || *r.Watermark < *prev.Watermark) {
		pw.violations = append(pw.violations, fmt.Sprintf("%s at rev %d: watermark %v below %d", key, rev, wm(r.Watermark), *prev.Watermark))
	}
	if seen && prev.Completed && !r.Completed {
		pw.violations = append(pw.violations, fmt.Sprintf("%s at rev %d: completed split came back uncompleted", key, rev))
	}
	pw.last[key] = r
}

func wm(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// finish stops the watch and fails the test on a violation or unless
// every split ended completed at its last row.
func (pw *progressWatch) finish(t *testing.T) {
	t.Helper()
	waitFor(t, 10*time.Second, "every split's completed progress in the watch", func() bool {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		done := 0
		for _, r := range pw.last {
			if r.Completed {
				done++
			}
		}
		return done == splits
	})
	pw.stop()
	<-pw.done
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for _, v := range pw.violations {
		t.Errorf("progress: %s", v)
	}
	for key, r := range pw.last {
		first := int64(slices.Index(splitIDs(), coordination.SplitID(strings.TrimPrefix(key, protocol.PrefixProgress)))) * rowsPerSplit
		if r.Watermark == nil || *r.Watermark != first+rowsPerSplit {
			t.Errorf("%s: final watermark %s, want %d", key, wm(r.Watermark), first+rowsPerSplit)
		}
	}
	t.Logf("progress watch: %d events over %d watches, no watermark decreased", pw.events, pw.rewatches)
}

// splitIDs returns the job's split ids in plan order.
func splitIDs() []coordination.SplitID {
	plan, _ := rangePlanner{splits: splits, rows: rowsPerSplit}.Plan(context.Background(), coordination.PlanContext{})
	var ids []coordination.SplitID
	for _, s := range plan.Splits {
		ids = append(ids, s.Spec.ID)
	}
	return ids
}

// judge checks the ledger: every row delivered, every replay within the
// bound.
func (j *job) judge() {
	j.t.Helper()
	v := j.out.judge(totalRows)
	if len(v.missing) > 0 {
		j.t.Errorf("rows never delivered (first %d): %v", len(v.missing), v.missing)
	}
	if v.maxReplay > replayBound {
		j.t.Errorf("a tenancy replayed %d rows of its predecessor's, want at most %d", v.maxReplay, replayBound)
	}
	j.t.Logf("ledger: %d rows, %d duplicates (%.2f%% of the job), %d moves, largest replay %d rows (bound %d)",
		totalRows, v.duplicates, 100*float64(v.duplicates)/totalRows, v.moves, v.maxReplay, replayBound)
	j.audit()
	if j.t.Failed() {
		j.t.Logf("log:\n%s", j.logs.String())
	}
}

// audit runs coordctl audit on the finished job: the store's own history of
// every split and progress record must show the fence held.
func (j *job) audit() {
	j.t.Helper()
	var out strings.Builder
	args := append([]string{"audit"}, j.dep.ctl...)
	if code := coordctl.Run(j.t.Context(), args, &out, &out); code != coordctl.ExitOK {
		j.t.Errorf("coordctl audit exited %d:\n%s", code, out.String())
		return
	}
	j.t.Logf("coordctl audit:\n%s", out.String())
}

func TestJobSurvivesServerRestartOnTheSameStore(t *testing.T) {
	t.Parallel() // waits in real time
	srv, err := embednats.StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	j := startJob(t, natsDeployment(natsstore.Config{Servers: []string{srv.URL()}, Job: "e2e-single", History: auditHistory}))
	pw := j.watchProgress()
	j.waitDelivered(0.3)
	srv.Stop()
	t.Logf("server stopped at %d rows delivered", j.out.delivered())
	time.Sleep(outage) // the outage itself, not a wait for a condition
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	j.finish()
	pw.finish(t)
	j.judge()
}

func TestJobSurvivesAClusterNodeRestart(t *testing.T) {
	t.Parallel() // waits in real time
	nodes, err := embednats.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embednats.StopAll(nodes) })
	cfg := natsstore.Config{Job: "e2e-r3", Replicas: 3, History: auditHistory}
	for _, n := range nodes {
		cfg.Servers = append(cfg.Servers, n.URL())
	}
	j := startJob(t, natsDeployment(cfg))
	pw := j.watchProgress()
	j.waitDelivered(0.3)
	victim := streamLeader(t, nodes, "KV_coordination_e2e-r3_state")
	victim.Stop()
	t.Logf("node %s (the state stream's leader) stopped at %d rows delivered", victim.Name(), j.out.delivered())
	time.Sleep(outage) // the outage itself, not a wait for a condition
	if err := victim.Restart(); err != nil {
		t.Fatal(err)
	}
	j.finish()
	pw.finish(t)
	j.judge()
}

// streamLeader returns the node leading stream.
func streamLeader(t *testing.T, nodes []*embednats.Server, stream string) *embednats.Server {
	t.Helper()
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	for _, n := range nodes {
		if n.Name() == info.Cluster.Leader {
			return n
		}
	}
	t.Fatalf("stream %s: leader %q is none of the nodes", stream, info.Cluster.Leader)
	return nil
}
