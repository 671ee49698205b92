package testkit

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
)

// timing is one set of the knobs a failover depends on.
type timing struct {
	name string
	set  func(*coordination.Config)
}

// failoverTimings are the timings docs/config.md's "Failover and tuning" quotes:
// the library's defaults, the main example's, and the defaults with
// a 10s lease (KCL's failover time) and no rebalance delay.
var failoverTimings = []timing{
	{"defaults", func(c *coordination.Config) {
		d := coordination.DefaultConfig()
		c.LeaseDuration, c.OpTimeout, c.ReplanInterval, c.ReconcileInterval = d.LeaseDuration, d.OpTimeout, d.ReplanInterval, d.ReconcileInterval
		c.DrainDeadline, c.RebalanceDelay, c.StartupGrace = d.DrainDeadline, d.RebalanceDelay, d.StartupGrace
	}},
	{"examples", func(c *coordination.Config) { // examples/backfill/worker.go's timing
		d := coordination.DefaultConfig()
		c.LeaseDuration, c.OpTimeout, c.ReplanInterval, c.ReconcileInterval = 3*time.Second, time.Second, 3*time.Second, 2*time.Second
		c.DrainDeadline, c.RebalanceDelay, c.StartupGrace = 2*time.Second, 0, d.StartupGrace
	}},
	{"10s lease, no delay", func(c *coordination.Config) {
		d := coordination.DefaultConfig()
		c.LeaseDuration, c.OpTimeout, c.ReplanInterval, c.ReconcileInterval = 10*time.Second, 3*time.Second, d.ReplanInterval, d.ReconcileInterval
		c.DrainDeadline, c.RebalanceDelay, c.StartupGrace = d.DrainDeadline, 0, d.StartupGrace
	}},
}

// TestFailoverTakesLeasePlusRebalanceDelay measures, on the fleet's mock
// clock, how long a crashed worker's splits stay unheld (until the survivor
// holds them all) and how long a departed one's do, for each timing of
// failoverTimings. A crash costs the presence expiry (LeaseDuration after
// the last renewal, and renewals land at most 0.4 × LeaseDuration apart, so
// 0.6 to 1 lease after the crash) plus RebalanceDelay plus up to a heartbeat
// to republish and claim; where in the heartbeat the crash falls varies from
// run to run. A departure hands the splits back, so they move within a
// heartbeat whatever the lease and the delay.
func TestFailoverTakesLeasePlusRebalanceDelay(t *testing.T) {
	for _, tm := range failoverTimings {
		t.Run(tm.name, func(t *testing.T) {
			var cfg coordination.Config
			var crash, depart time.Duration
			for _, crashed := range []bool{true, false} {
				RunFleet(t, func(t *testing.T, f *Fleet) {
					cfg = f.Config()
					splits, p := newJob(8)
					f.Start("w1", p)
					w2 := f.Start("w2", p)
					f.Until("both hold four", func() bool { return allHeld(f, splits, "") && len(w2.HeldIDs()) == 4 })
					if crashed {
						f.Crash("w2")
					} else if err := w2.Depart(); err != nil {
						t.Fatal(err)
					}
					took := f.Until("w1 holds every split", func() bool { return allHeld(f, splits, "w1") })
					if crashed {
						crash = took
					} else {
						depart = took
					}
				}, WithConfig(tm.set), WithUntilBudget(5*time.Minute))
			}
			heartbeat := cfg.LeaseDuration / 3
			earliest := cfg.LeaseDuration*6/10 + cfg.RebalanceDelay
			latest := cfg.LeaseDuration + cfg.RebalanceDelay + heartbeat
			if crash < earliest || crash > latest {
				t.Errorf("a crash moved the splits after %v, want between 0.6 lease + delay (%v) and lease + delay + heartbeat (%v)",
					crash, earliest, latest)
			}
			if depart > heartbeat {
				t.Errorf("a departure moved the splits after %v, want within a heartbeat (%v)", depart, heartbeat)
			}
			t.Logf("lease %v, rebalance delay %v: crash %v, departure %v", cfg.LeaseDuration, cfg.RebalanceDelay, crash, depart)
		})
	}
}
