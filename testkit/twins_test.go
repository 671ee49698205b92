package testkit

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// docs/protocol.md, "Sessions", "Twins": a second live process started with
// an InstanceID in use is refused (Fatal naming the id) within a few
// heartbeats; the fight charges no attempt and quarantines nothing, and the
// worker already running and the rest of the fleet complete the job.
func TestFleetLiveTwinIsRefusedWithoutCharging(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(20)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy.Work, w2.Policy.Work = WorkCommit, WorkCommit
		w1.Policy.ExpectFatal = true // checked below
		f.Until("every split is held", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) > 0 })
		twin := f.StartTwin("w1-twin", "w1", p)
		twin.Policy.ExpectFatal = true
		twin.Policy.Work = WorkCommit
		took := f.Until("a twin fails", func() bool { return twin.Err() != nil || w1.Err() != nil })
		t.Logf("a twin failed after %v", took)
		if err := w1.Err(); err != nil {
			t.Errorf("the worker already running failed: %v", err)
			f.Crash("w1")
		}
		if err := twin.Err(); coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
			t.Errorf("twin failed with %v, want Fatal naming the InstanceID", err)
		}
		if took > 3*lease {
			t.Errorf("the twin was refused after %v, want within a few heartbeats", took)
		}
		if twin.Err() != nil {
			f.Crash("w1-twin")
		}
		for _, m := range f.Live() {
			m.Policy.Work = WorkComplete
		}
		f.Until("the fleet reaches its verdict", f.AllSettled)
		for _, m := range f.Live() {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Errorf("%s verdict = %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
		quarantined, charged := 0, 0
		for _, s := range splits {
			v, _ := f.Record(s)
			if v.Status == "quarantined" {
				quarantined++
			}
			if v.Attempts != 0 {
				charged++
			}
		}
		if quarantined != 0 || charged != 0 {
			t.Errorf("%d of %d splits quarantined and %d charged an attempt by the twin", quarantined, len(splits), charged)
		}
		if t.Failed() {
			t.Log(f.Describe())
		}
	}, WithConfig(func(c *coordination.Config) { c.MaxInFlight = 16 }))
}

// docs/protocol.md, "Sessions", "Twins": a twin that takes the presence key
// over while the renewals of the worker already running do not land (they
// stalled for the twin window, so that worker looked crashed) holds the
// splits from then on; the stalled worker, still running, fails as a twin
// without taking a split back, so each split is charged at most the one
// attempt of the takeover and none is quarantined.
func TestFleetStalledWorkerYieldsToItsTwin(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(20)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy.Work, w2.Policy.Work = WorkCommit, WorkCommit
		w1.Policy.ExpectFatal = true
		f.Until("every split is held", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) > 0 })
		// Every presence write of w1 is dropped until the twin holds a split.
		presence := Match{Keyspace: store.Ephemeral, Prefix: protocol.WorkerKey("w1")}
		drop := w1.Store().DropEveryWrite(presence)
		twin := f.StartTwin("w1-twin", "w1", p)
		twin.Policy.Work = WorkCommit
		f.Until("the twin takes the stalled worker's splits", func() bool { return len(twin.HeldIDs()) > 0 })
		w1.Store().Remove(drop)
		f.Until("the stalled worker fails", func() bool { return w1.Err() != nil })
		if err := w1.Err(); coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
			t.Fatalf("the stalled worker failed with %v, want Fatal naming the InstanceID", err)
		}
		if err := twin.Err(); err != nil {
			t.Fatalf("the twin failed: %v", err)
		}
		f.Crash("w1")
		twin.Policy.Work, w2.Policy.Work = WorkComplete, WorkComplete
		f.Until("the fleet reaches its verdict", f.AllSettled)
		for _, m := range f.Live() {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s verdict = %#v, want AllComplete\n%s", m.ID(), m.Verdict(), f.Describe())
			}
		}
		for _, s := range splits {
			if v, _ := f.Record(s); v.Status != "completed" || v.Attempts > 1 {
				t.Fatalf("split %s: %s, want completed, charged at most the takeover's attempt\n%s", s, v, f.Describe())
			}
		}
	}, WithConfig(func(c *coordination.Config) { c.MaxInFlight = 16 }))
}

// docs/protocol.md, "Sessions", "Restart with the same id": a worker that
// crashes while holding a split and restarts with the same InstanceID
// reclaims it within the twin window (its dead predecessor's presence
// stands still), charged one attempt each time, so a split that crashes
// its worker every time is quarantined after MaxAttempts tenancies.
func TestFleetCrashLoopingPoisonSplitIsCharged(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		max := f.Config().MaxAttempts
		for attempts := uint32(1); attempts < max; attempts++ {
			f.Crash("w1")
			w1 = f.Start("w1", p)
			took := f.Until("the restart reclaims s00", func() bool { return w1.Holds("s00") })
			if bound := lease/2 + 2*f.Step(); took > bound {
				t.Fatalf("restart %d reclaimed after %v, want within the twin window (%v) and a step", attempts, took, lease/2)
			}
			if v, _ := f.Record("s00"); v.Attempts != attempts {
				t.Fatalf("after restart %d: %s, want %d attempts charged", attempts, v, attempts)
			}
		}
		f.Crash("w1")
		w1 = f.Start("w1", p)
		f.Until("the verdict", f.AllSettled)
		if got, want := w1.Verdict(), (coordination.Stalled{Quarantined: 1}); got != want {
			t.Fatalf("verdict %#v, want %#v", got, want)
		}
		if a := w1.Quarantines()["s00"]; a != max {
			t.Fatalf("Quarantined{s00, %d}, want %d attempts", a, max)
		}
		if n := countGains(f, "s00"); n != int(max) {
			t.Fatalf("s00 ran %d tenancies, want exactly MaxAttempts (%d)", n, max)
		}
	})
}
