package testkit

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// runCollecting runs fn on a fleet in a bubble whose failures are collected
// instead of failing t, and returns the first one.
func runCollecting(t *testing.T, fn func(f *Fleet), opts ...Option) (failure string) {
	synctest.Test(t, func(bt *testing.T) {
		onFail := withFailHandler(func(msg string) {
			if failure == "" {
				failure = msg
			}
		})
		f := NewFleet(bt, append(opts, onFail)...)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fleetFailure); !ok {
					panic(r)
				}
			}
		}()
		fn(f)
	})
	return failure
}

func TestHarnessConfigDefaults(t *testing.T) {
	c := HarnessConfig()
	want := coordination.DefaultConfig()
	want.LeaseDuration = 1500 * time.Millisecond
	want.OpTimeout = 200 * time.Millisecond
	want.ReplanInterval = want.LeaseDuration
	want.ReconcileInterval = 400 * time.Millisecond
	want.DrainDeadline = want.LeaseDuration / 2
	want.RebalanceDelay = 0
	want.MinCutWeight = 1
	if c != want {
		t.Fatalf("HarnessConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFleetAdvanceStepsAtMostATwelfthOfTheLease(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		start, steps := f.Now(), f.steps
		f.Advance(time.Second)
		if got := f.Now().Sub(start); got != time.Second {
			t.Fatalf("Advance(1s) moved the clock %v", got)
		}
		if n := f.steps - steps; n != 8 {
			t.Fatalf("Advance(1s) took %d steps, want 8 of at most %v", n, f.Step())
		}
	}, WithConfig(func(c *coordination.Config) { c.LeaseDuration = 1500 * time.Millisecond }))
}

func TestFleetUntilFailsNamingWhat(t *testing.T) {
	failure := runCollecting(t, func(f *Fleet) {
		f.Until("the impossible", func() bool { return false })
	})
	if !strings.Contains(failure, "the impossible did not happen within 20s of clock time") {
		t.Fatalf("failure = %q", failure)
	}
}

// A rogue write that moves a watermark backwards is caught by the fleet's
// continuous invariant check (I1), naming the split and the revisions.
func TestFleetCatchesARogueRegression(t *testing.T) {
	failure := runCollecting(t, func(f *Fleet) {
		p := NewTestPlanner(jobFP, Splits(1)...)
		w1 := f.Start("w1", p)
		f.Until("w1 holds s00", func() bool { return w1.Holds("s00") })
		if err := w1.Commit("s00", coordination.SplitProgress{Watermark: 10}); err != nil {
			f.Fail("commit: %v", err)
		}
		f.Pump()
		e, _, _ := f.Store().Get(f.ctx, store.Durable, protocol.ProgressKey("s00"))
		rec, err := protocol.DecodeProgress(protocol.ProgressKey("s00"), e.Value, protocol.Fingerprint(jobFP))
		if err != nil {
			f.Fail("decode: %v", err)
		}
		w := int64(3)
		rec.Watermark = &w
		if _, ok, err := f.Store().Update(f.ctx, store.Durable, protocol.ProgressKey("s00"), protocol.EncodeProgress(rec), e.Revision); !ok || err != nil {
			f.Fail("rogue write: %v %v", ok, err)
		}
		f.Pump()
	})
	if !strings.Contains(failure, "I1: split s00: watermark decreased") {
		t.Fatalf("failure = %q, want an I1 violation", failure)
	}
}

func TestTestPlannerStagesAndCursor(t *testing.T) {
	p := NewGrowingPlanner("fp", SplitsFrom("a", 0, 1), SplitsFrom("b", 0, 2))
	sp, err := p.Plan(t.Context(), coordination.PlanContext{})
	if err != nil || len(sp.Splits) != 1 || sp.Finality != coordination.PlanOpen || string(sp.PlannerState) != "1" {
		t.Fatalf("first run = %+v, %v", sp, err)
	}
	sp, err = p.Plan(t.Context(), coordination.PlanContext{PlannerState: sp.PlannerState})
	if err != nil || len(sp.Splits) != 3 || sp.Finality != coordination.PlanFinal {
		t.Fatalf("second run = %+v, %v", sp, err)
	}
	if p.Runs() != 2 {
		t.Fatalf("Runs() = %d", p.Runs())
	}
	open := NewOpenPlanner("fp", Splits(2)...)
	if sp, _ := open.Plan(t.Context(), coordination.PlanContext{}); sp.Finality != coordination.PlanOpen || len(sp.Splits) != 2 {
		t.Fatalf("open planner = %+v", sp)
	}
	if ws := Splits(3, 7); ws[0].Spec.Weight != 7 || ws[1].Spec.Weight != 1 || ws[2].Spec.ID != "s02" {
		t.Fatalf("Splits = %+v", ws)
	}
}

func TestFleetClockRateSkewsAMembersClock(t *testing.T) {
	RunFleet(t, func(t *testing.T, f *Fleet) {
		_, p := newJob(2)
		fast := f.Start("fast", p)
		slow := f.Start("slow", p)
		plain := f.Start("plain", p)
		start := f.Now()
		f.Advance(3 * time.Second)
		for _, tc := range []struct {
			m    *Member
			want time.Duration
		}{{fast, 3300 * time.Millisecond}, {slow, 2700 * time.Millisecond}, {plain, 3 * time.Second}} {
			if got := tc.m.Config().Clock.Now().Sub(start); got != tc.want {
				t.Errorf("%s's clock advanced %v while the fleet's advanced 3s, want %v", tc.m.ID(), got, tc.want)
			}
		}
		if got := f.Now().Sub(start); got != 3*time.Second {
			t.Errorf("the fleet's clock advanced %v, want 3s", got)
		}
	}, WithClockRate("fast", 1.1), WithClockRate("slow", 0.9))
}
