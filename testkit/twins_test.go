package testkit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
// reclaims it within one heartbeat (its dead predecessor does not answer
// the challenge and its presence stands still), charged one attempt each
// time, so a split that crashes its worker every time is quarantined after
// MaxAttempts tenancies.
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
			if took > lease/3 {
				t.Fatalf("restart %d reclaimed after %v, want within one heartbeat (%v)", attempts, took, lease/3)
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

// docs/protocol.md, "Sessions", "Restart with the same id": a worker that
// crashes holding splits and restarts at once with the same InstanceID
// challenges its dead predecessor's presence, gets no answer, takes the
// key over and reclaims every split within one heartbeat (LeaseDuration/3)
// of its start, wherever in the heartbeat the crash came.
func TestFleetRestartAfterACrashReclaimsWithinOneHeartbeat(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(4)
		f.Start("w1", p)
		f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
		for crash := range 3 {
			f.Advance(time.Duration(crash) * f.Step()) // another point of the heartbeat
			f.Crash("w1")
			f.Start("w1", p)
			took := f.Until("the restart reclaims every split", func() bool { return allHeld(f, splits, "w1") })
			t.Logf("restart %d reclaimed after %v", crash+1, took)
			if took > lease/3 {
				t.Fatalf("restart %d reclaimed after %v, want within one heartbeat (%v)\n%s", crash+1, took, lease/3, f.Describe())
			}
		}
		for _, s := range splits {
			if v, _ := f.Record(s); v.Attempts != 3 {
				t.Fatalf("split %s: %s, want the 3 reclaims charged", s, v)
			}
		}
	})
}

// docs/protocol.md, "Sessions", "Restart with the same id": a second
// process started with a live worker's InstanceID just after that worker
// renewed its presence (its next renewal is at least 0.8 heartbeat away,
// beyond the twin window, so only its answer to the challenge moves the key
// in time) fails as a twin, every time; the live worker keeps its session
// and its splits, and nothing is charged.
func TestFleetLiveTwinAnsweringTheChallengeIsNeverTakenOver(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(8)
		w1 := f.Start("w1", p)
		w2 := f.Start("w2", p)
		w1.Policy.Work, w2.Policy.Work = WorkCommit, WorkCommit
		f.Until("every split is held", func() bool { return allHeld(f, splits, "") && len(w1.HeldIDs()) > 0 })
		nonce, _ := presenceOf(t, f, "w1")
		for i := range 3 {
			_, rev := presenceOf(t, f, "w1")
			for _, now := presenceOf(t, f, "w1"); now == rev; _, now = presenceOf(t, f, "w1") {
				f.Advance(5 * time.Millisecond)
			}
			name := fmt.Sprintf("w1-twin-%d", i)
			twin := f.StartTwin(name, "w1", p)
			twin.Policy.ExpectFatal = true
			took := f.Until("the twin fails", func() bool { return twin.Err() != nil || w1.Err() != nil })
			if err := w1.Err(); err != nil {
				t.Fatalf("twin %d took the live worker over: it failed with %v\n%s", i, err, f.Describe())
			}
			if err := twin.Err(); coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
				t.Fatalf("twin %d failed with %v, want Fatal naming the InstanceID", i, err)
			}
			if took > lease/3 {
				t.Errorf("twin %d was refused after %v, want within one heartbeat", i, took)
			}
			f.Crash(name)
			if got, _ := presenceOf(t, f, "w1"); got != nonce {
				t.Fatalf("twin %d: presence nonce %q, want the live worker's %q", i, got, nonce)
			}
		}
		for _, m := range f.Live() {
			m.Policy.Work = WorkComplete
		}
		f.Until("the fleet reaches its verdict", f.AllSettled)
		if _, ok := w1.Verdict().(coordination.AllComplete); !ok {
			t.Fatalf("w1 verdict = %#v, want AllComplete", w1.Verdict())
		}
		for _, s := range splits {
			if v, _ := f.Record(s); v.Status != "completed" || v.Attempts != 0 {
				t.Fatalf("split %s: %s, want completed and never charged\n%s", s, v, f.Describe())
			}
		}
	}, WithConfig(func(c *coordination.Config) { c.MaxInFlight = 16 }))
}

// presenceOf reads instance's presence key: its session nonce and revision.
func presenceOf(t *testing.T, f *Fleet, instance string) (string, store.Revision) {
	t.Helper()
	key := protocol.WorkerKey(instance)
	e, ok, err := f.Store().Get(context.Background(), store.Ephemeral, key)
	if err != nil || !ok {
		t.Fatalf("presence key %s: found %v, err %v", key, ok, err)
	}
	p, err := protocol.DecodePresence(key, e.Value)
	if err != nil {
		t.Fatal(err)
	}
	return p.Nonce, e.Revision
}
