package actors

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
)

func TestMetricsAreRegisteredAndInitialised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		reg := prometheus.NewPedanticRegistry()
		w := r.start("w1", workertest.FinalPlan("a", "b"), func(c *coordination.Config) { c.Metrics = reg })
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		series := 0
		for _, mf := range mfs {
			names = append(names, strings.TrimPrefix(mf.GetName(), "coordination_"))
			for _, m := range mf.GetMetric() {
				series++
				ok := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "worker" && lp.GetValue() == "w1" {
						ok = true
					}
				}
				if !ok {
					t.Fatalf("%s lacks worker=w1", mf.GetName())
				}
			}
		}
		sort.Strings(names)
		want := []string{"acquisitions_total", "assignment_latency_seconds", "build_info", "drain_duration_seconds", "idle", "leader", "live_workers", "reconcile_duration_seconds", "releases_total", "replan_duration_seconds", "replans_total", "revocations_total", "split_failures_total", "split_losses_total", "splits_completed", "splits_draining", "splits_owned", "splits_planned_total", "splits_quarantined", "store_op_duration_seconds", "write_duration_seconds", "writes_total", "quarantines_total", "cuts_total", "splits_remaining", "weight_remaining"}
		sort.Strings(want)
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Fatalf("families\n got %v\nwant %v", names, want)
		}
		for _, mf := range mfs {
			if mf.GetName() == "coordination_acquisitions_total" && len(mf.GetMetric()) != 4 {
				t.Fatalf("acquisitions_total has %d series, want 4", len(mf.GetMetric()))
			}
			if mf.GetName() == "coordination_build_info" {
				m := mf.GetMetric()[0]
				if !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool {
					return lp.GetName() == "version" && lp.GetValue() == coordination.Version
				}) || m.GetGauge().GetValue() != 1 {
					t.Fatalf("build_info = %v, want 1 with version=%s", m, coordination.Version)
				}
			}
		}

		// A second worker on the same registry registers beside the first.
		w2 := r.start("w2", workertest.FinalPlan("a", "b"), func(c *coordination.Config) { c.Metrics = reg })
		r.until("both gained", 10*time.Second, []*member{w, w2}, func() bool { return len(w.held)+len(w2.held) == 2 })
		for _, g := range []string{"coordination_splits_remaining", "coordination_weight_remaining"} {
			if got := workertest.GaugeOf(t, reg, g, "w1"); got != 2 {
				t.Fatalf("%s{worker=w1} = %v before any completion, want 2 (two splits of weight 1)", g, got)
			}
		}
		for _, m := range []*member{w, w2} {
			for id := range m.held {
				if err := m.c.Commit(id, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.until("verdict", 10*time.Second, []*member{w, w2}, func() bool { return verdictOf(w) != nil && verdictOf(w2) != nil })
		for _, g := range []string{"coordination_splits_remaining", "coordination_weight_remaining"} {
			for _, worker := range []string{"w1", "w2"} {
				if got := workertest.GaugeOf(t, reg, g, worker); got != 0 {
					t.Fatalf("%s{worker=%s} = %v after the verdict, want 0", g, worker, got)
				}
			}
		}
		if created := workertest.CounterSum(t, reg, "coordination_acquisitions_total", "create"); created != 2 {
			t.Fatalf("acquisitions_total{reason=create} = %v, want 2", created)
		}
		for _, m := range []*member{w, w2} {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestMetricsRegistrationConflictIsSkipped(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	clash := prometheus.NewCounter(prometheus.CounterOpts{Name: "coordination_releases_total", Help: "x", ConstLabels: prometheus.Labels{"worker": "w1"}})
	reg.MustRegister(clash)
	m := worker.NewMetrics(reg, "w1", workertest.DiscardLogger())
	if m.Releases != nil {
		t.Fatal("conflicting family was kept")
	}
	m.Released() // nil-safe
	var nilM *worker.Metrics
	nilM.Released()
	nilM.Owned(3)
	if m.SplitsOwned == nil {
		t.Fatal("other families were not registered")
	}
}
