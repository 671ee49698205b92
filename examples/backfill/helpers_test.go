package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/examplekit"
	"github.com/spate-go/coordination/internal/examplekit/exampletest"
	"github.com/spate-go/coordination/testkit"
)

// waitFor is how long a test waits for something that should happen within
// a few seconds; it only bounds a failing test.
const waitFor = exampletest.WaitFor

// eventually polls cond until it holds or waitFor passes, then fails with what.
var eventually = exampletest.Eventually

// embedded starts an embedded NATS server for the test, its store in a
// temporary directory, shut down at cleanup.
func embedded(t testing.TB) *embeddedServer {
	t.Helper()
	srv, err := startEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// testLedger opens job's ledger on srv, closed at cleanup.
func testLedger(t testing.TB, srv *embeddedServer, job string) *ledger {
	t.Helper()
	l, err := openLedger(t.Context(), srv.URL(), job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// oneSplit is a data set of one split "s1" holding records 0..records-1.
func oneSplit(records int64) *dataset {
	return &dataset{records: records, splits: []dataSplit{{ID: "s1", Range: recordRange{0, records}}}}
}

// events records the source's lane reports.
type events struct {
	gains []*delivery
	ends  []laneEnd
}

func (e *events) gained(_ string, _ coordination.SplitID, _ int64, prev *delivery) {
	e.gains = append(e.gains, prev)
}
func (e *events) ended(_ string, end laneEnd) { e.ends = append(e.ends, end) }

// harness drives one source through a real driver over the scripted
// coordinator, delivering to a real ledger on an embedded NATS server.
type harness struct {
	t      testing.TB
	script *testkit.CoordinatorScript
	drv    *driver.Driver
	src    *source
	sink   *ledger
	ds     *dataset
	ev     *events
}

// newHarness returns a started driver over a fresh source reading split
// "s1" of records 0..records-1 at perSecond records per lane.
func newHarness(t testing.TB, records, perSecond int64) *harness {
	t.Helper()
	c, script := testkit.NewScripted()
	sink := testLedger(t, embedded(t), "test")
	dead := make(chan struct{})
	ev := &events{}
	src := newSource("w1", "run1", sink, newReadPace(perSecond), dead, ev)
	drv := driver.New(c, src)
	ds := oneSplit(records)
	if err := drv.Start(planner{ds: ds}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(dead)
		src.wait()
	})
	return &harness{t: t, script: script, drv: drv, src: src, sink: sink, ds: ds, ev: ev}
}

// spec returns a spec for records r under id.
func spec(id string, r recordRange) coordination.SplitSpec {
	return coordination.SplitSpec{ID: coordination.SplitID(id), Descriptor: encodeDescriptor(r), Weight: uint64(max(1, r.Len()))}
}

// next polls the driver until an event satisfies want and returns it. Poll
// errors fail the test.
func (h *harness) next(what string, want func(driver.Event) bool) driver.Event {
	h.t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		ev, err := h.drv.PollEvents(20 * time.Millisecond)
		if err != nil {
			h.t.Fatalf("waiting for %s: PollEvents: %v", what, err)
		}
		if want(ev) {
			return ev
		}
	}
	h.t.Fatalf("timed out waiting for %s", what)
	return nil
}

// started waits for LanesAdded and starts the lanes, as driver.Run does.
func (h *harness) started() driver.LanesAdded {
	h.t.Helper()
	ev := h.next("LanesAdded", is[driver.LanesAdded]).(driver.LanesAdded)
	h.src.StartLanes(ev.Lanes)
	return ev
}

// tally returns what the ledger holds for the harness's data set.
func (h *harness) tally() tally { return tallyOf(h.ds, h.sink.snapshot()) }

// is returns a predicate matching events of type E.
func is[E driver.Event](ev driver.Event) bool {
	_, ok := ev.(E)
	return ok
}

// lastCommit returns the last successful commit of split, failing if none.
func (h *harness) lastCommit(split coordination.SplitID) coordination.SplitProgress {
	h.t.Helper()
	cs := h.script.Commits()
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Split == split {
			return cs[i].Progress
		}
	}
	h.t.Fatalf("no commit of %s", split)
	return coordination.SplitProgress{}
}

// watermarksOf returns the acknowledged watermarks of parts.
func (h *harness) watermarksOf(parts []driver.PartitionID) []driver.Watermark {
	var ws []driver.Watermark
	for _, w := range h.src.Acked() {
		for _, p := range parts {
			if w.Partition == p {
				ws = append(ws, w)
			}
		}
	}
	return ws
}

// discardLogger returns a logger that drops everything.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// contextWithCancel returns a context ended by cancel or by the test's end.
func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, cancel
}

// quietCommon is the common flags of an in-process run: no -nats, no
// -instance, the given -timeout and no library logs.
func quietCommon(timeout time.Duration) examplekit.Common {
	return examplekit.Common{Timeout: timeout, Log: "off"}
}

// bucketNames returns the names of the KV buckets on srv.
func bucketNames(t testing.TB, srv *embeddedServer) []string {
	t.Helper()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range js.KeyValueStoreNames(t.Context()).Name() {
		names = append(names, name)
	}
	return names
}
