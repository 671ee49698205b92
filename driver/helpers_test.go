package driver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// planner is a trivial coordination.Planner.
type planner struct{}

func (planner) Fingerprint() string { return "driver-test" }
func (planner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Finality: coordination.PlanFinal}, nil
}

// recSource is a Source whose answers the test scripts and whose calls it
// records, in order, as "Method(split)" strings.
type recSource struct {
	calls  []string
	opens  []driver.Opening
	closed []coordination.SplitID

	openErrs    map[coordination.SplitID][]error // FIFO; popped per OpenSplit
	validateErr map[coordination.SplitID]error
	encodeErr   map[coordination.SplitID]error
	completeAt  map[coordination.SplitID]int64 // EncodeCommit sets Completed at or above this watermark
	sweep       map[coordination.SplitID]*coordination.SplitProgress
	sweepErr    map[coordination.SplitID]error
	finishing   []coordination.SplitID
	acceptRev   map[coordination.SplitID]bool
	drainCut    map[coordination.SplitID]*coordination.SplitProgress
	drainErr    map[coordination.SplitID]error

	// beforeTakeFinishing, when set, runs at the start of TakeFinishing (the
	// last step before a park).
	beforeTakeFinishing func()
}

func newSource() *recSource {
	return &recSource{
		openErrs:    map[coordination.SplitID][]error{},
		validateErr: map[coordination.SplitID]error{},
		encodeErr:   map[coordination.SplitID]error{},
		completeAt:  map[coordination.SplitID]int64{},
		sweep:       map[coordination.SplitID]*coordination.SplitProgress{},
		sweepErr:    map[coordination.SplitID]error{},
		acceptRev:   map[coordination.SplitID]bool{},
		drainCut:    map[coordination.SplitID]*coordination.SplitProgress{},
		drainErr:    map[coordination.SplitID]error{},
	}
}

func (s *recSource) record(method string, split coordination.SplitID) {
	s.calls = append(s.calls, method+"("+string(split)+")")
}

// count returns how many times method was called for split.
func (s *recSource) count(method string, split coordination.SplitID) int {
	n := 0
	for _, c := range s.calls {
		if c == method+"("+string(split)+")" {
			n++
		}
	}
	return n
}

func (s *recSource) OpenSplit(o driver.Opening) error {
	s.record("OpenSplit", o.Split.ID)
	if errs := s.openErrs[o.Split.ID]; len(errs) > 0 {
		s.openErrs[o.Split.ID] = errs[1:]
		return errs[0]
	}
	s.opens = append(s.opens, o)
	return nil
}

func (s *recSource) ValidateResume(spec coordination.SplitSpec, p coordination.SplitProgress) error {
	s.record("ValidateResume", spec.ID)
	return s.validateErr[spec.ID]
}

func (s *recSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	s.record("EncodeCommit", split)
	if err := s.encodeErr[split]; err != nil {
		return coordination.SplitProgress{}, err
	}
	at, ok := s.completeAt[split]
	return coordination.SplitProgress{Watermark: w, State: []byte(fmt.Sprint(w)), Completed: ok && w >= at}, nil
}

func (s *recSource) Sweep(split coordination.SplitID) (*coordination.SplitProgress, error) {
	s.record("Sweep", split)
	if err := s.sweepErr[split]; err != nil {
		return nil, err
	}
	return s.sweep[split], nil
}

func (s *recSource) CloseSplit(split coordination.SplitID) {
	s.record("CloseSplit", split)
	s.closed = append(s.closed, split)
}

func (s *recSource) TakeFinishing() []coordination.SplitID {
	if s.beforeTakeFinishing != nil {
		s.beforeTakeFinishing()
	}
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *recSource) BeginRevoke(split coordination.SplitID) bool {
	s.record("BeginRevoke", split)
	return s.acceptRev[split]
}

func (s *recSource) DrainReady(split coordination.SplitID) (*coordination.SplitProgress, error) {
	s.record("DrainReady", split)
	if err := s.drainErr[split]; err != nil {
		return nil, err
	}
	return s.drainCut[split], nil
}

// hookedCoordinator wraps the scripted coordinator to record the lifecycle
// calls and to inject errors the script cannot express.
type hookedCoordinator struct {
	*testkit.ScriptedCoordinator
	lifecycle []string

	startErr, pollErr, commitErr, declineErr, releaseDrainedErr, departErr error
	pollCalls                                                              int
	failErrs                                                               map[coordination.SplitID]error // returned by Fail after the script's
}

func (h *hookedCoordinator) Fail(id coordination.SplitID, epoch coordination.LeaseEpoch, reason string) error {
	if err := h.ScriptedCoordinator.Fail(id, epoch, reason); err != nil {
		return err
	}
	return h.failErrs[id]
}

func (h *hookedCoordinator) Commit(id coordination.SplitID, p coordination.SplitProgress) error {
	if h.commitErr != nil {
		return h.commitErr
	}
	return h.ScriptedCoordinator.Commit(id, p)
}

func (h *hookedCoordinator) SetWaker(w *coordination.Waker) {
	h.lifecycle = append(h.lifecycle, "SetWaker")
	h.ScriptedCoordinator.SetWaker(w)
}

func (h *hookedCoordinator) SetStop(stop <-chan struct{}) {
	h.lifecycle = append(h.lifecycle, "SetStop")
	h.ScriptedCoordinator.SetStop(stop)
}

func (h *hookedCoordinator) Start(p coordination.Planner) error {
	h.lifecycle = append(h.lifecycle, "Start")
	if h.startErr != nil {
		return h.startErr
	}
	return h.ScriptedCoordinator.Start(p)
}

func (h *hookedCoordinator) Poll() ([]coordination.Event, error) {
	h.pollCalls++
	if h.pollErr != nil {
		return nil, h.pollErr
	}
	return h.ScriptedCoordinator.Poll()
}

func (h *hookedCoordinator) DeclineRevoke(id coordination.SplitID) error {
	if err := h.ScriptedCoordinator.DeclineRevoke(id); err != nil {
		return err
	}
	return h.declineErr
}

func (h *hookedCoordinator) ReleaseDrained(ids ...coordination.SplitID) error {
	if err := h.ScriptedCoordinator.ReleaseDrained(ids...); err != nil {
		return err
	}
	return h.releaseDrainedErr
}

func (h *hookedCoordinator) Depart(held ...coordination.SplitID) error {
	if err := h.ScriptedCoordinator.Depart(held...); err != nil {
		return err
	}
	return h.departErr
}

// logRecord is one captured log record.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logSink is a slog.Handler that keeps every record.
type logSink struct {
	mu   *sync.Mutex
	recs *[]logRecord
}

func (l logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l logSink) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	*l.recs = append(*l.recs, rec)
	l.mu.Unlock()
	return nil
}
func (l logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logSink) WithGroup(string) slog.Handler      { return l }

// harness is a started driver over a hooked scripted coordinator and a
// recording source.
type harness struct {
	t      testing.TB
	c      *hookedCoordinator
	script *testkit.CoordinatorScript
	src    *recSource
	d      *driver.Driver
	logs   []logRecord
	mu     sync.Mutex
}

// newUnstarted builds a harness without starting the driver.
func newUnstarted(t testing.TB, opts ...driver.Option) *harness {
	t.Helper()
	sc, script := testkit.NewScripted()
	h := &harness{t: t, c: &hookedCoordinator{ScriptedCoordinator: sc}, script: script, src: newSource()}
	opts = append([]driver.Option{driver.WithLogger(slog.New(logSink{mu: &h.mu, recs: &h.logs}))}, opts...)
	h.d = driver.New(h.c, h.src, opts...)
	return h
}

// newHarness builds and starts a harness.
func newHarness(t testing.TB, opts ...driver.Option) *harness {
	t.Helper()
	h := newUnstarted(t, opts...)
	if err := h.d.Start(planner{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

// poll calls PollEvents(0) and fails the test on an error.
func (h *harness) poll() driver.Event {
	h.t.Helper()
	ev, err := h.d.PollEvents(0)
	if err != nil {
		h.t.Fatalf("PollEvents: %v", err)
	}
	return ev
}

// pollErr calls PollEvents(0) and fails the test unless it returns an error.
func (h *harness) pollErr() error {
	h.t.Helper()
	ev, err := h.d.PollEvents(0)
	if err == nil {
		h.t.Fatalf("PollEvents = %#v, want an error", ev)
	}
	return err
}

// expect polls once and checks the event.
func (h *harness) expect(want driver.Event) {
	h.t.Helper()
	if got := h.poll(); !reflect.DeepEqual(got, want) {
		h.t.Fatalf("PollEvents = %#v, want %#v", got, want)
	}
}

// open gains split id under epoch with progress p and polls until its lane
// is announced; it returns the lane.
func (h *harness) open(id coordination.SplitID, epoch coordination.LeaseEpoch, p *coordination.SplitProgress) driver.Lane {
	h.t.Helper()
	h.script.Gain(spec(id), epoch, p)
	ev := h.poll()
	added, ok := ev.(driver.LanesAdded)
	if !ok || len(added.Lanes) != 1 || added.Lanes[0].Split.ID != id {
		h.t.Fatalf("PollEvents after gaining %s = %#v, want LanesAdded with it", id, ev)
	}
	return added.Lanes[0]
}

// openDraining opens split id under epoch 1 with a source that accepts its
// revocation and, when cut is non-nil, reports cut as its drain cut.
func (h *harness) openDraining(id coordination.SplitID, cut *coordination.SplitProgress) driver.Lane {
	h.t.Helper()
	l := h.open(id, 1, nil)
	h.src.acceptRev[id] = true
	if cut != nil {
		h.src.drainCut[id] = cut
	}
	return l
}

// logged reports whether a record with level and msg was logged, and its
// attributes.
func (h *harness) logged(level slog.Level, msg string) (map[string]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.logs {
		if r.level == level && r.msg == msg {
			return r.attrs, true
		}
	}
	return nil, false
}

// countLogged returns how many records with msg were logged.
func (h *harness) countLogged(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.logs {
		if r.msg == msg {
			n++
		}
	}
	return n
}

// mustLog fails the test unless a record with level and msg was logged.
func (h *harness) mustLog(level slog.Level, msg string) map[string]string {
	h.t.Helper()
	attrs, ok := h.logged(level, msg)
	if !ok {
		h.t.Fatalf("no %v log %q; got %v", level, msg, h.logs)
	}
	return attrs
}

func spec(id coordination.SplitID) coordination.SplitSpec {
	return coordination.SplitSpec{ID: id, Descriptor: []byte("desc-" + id), Weight: 1}
}

func progress(w int64) *coordination.SplitProgress {
	return &coordination.SplitProgress{Watermark: w, State: []byte(fmt.Sprint(w))}
}

func completed(w int64) *coordination.SplitProgress {
	p := progress(w)
	p.Completed = true
	return p
}

// wantErr checks that err is a *coordination.Error of kind with reason.
func wantErr(t testing.TB, err error, kind coordination.ErrorKind, reason string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *coordination.Error", err)
	}
	if ce.Kind != kind || ce.Reason != reason {
		t.Fatalf("error = (%v, %q), want (%v, %q)", ce.Kind, ce.Reason, kind, reason)
	}
}

// ids builds a split id slice.
func ids(s ...coordination.SplitID) []coordination.SplitID { return s }

// commit builds an expected coordinator commit.
func commit(id coordination.SplitID, p *coordination.SplitProgress) coordination.Commit {
	return coordination.Commit{Split: id, Progress: *p}
}
