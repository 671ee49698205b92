package worker

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
)

var buckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics records the coordination_* families listed in docs/metrics.md. A nil *metrics, or a
// nil family inside one (registration conflict), records nothing.
type Metrics struct {
	SplitsOwned, splitsCompleted, splitsQuarantined, liveWorkers, leader, idle, splitsDraining prometheus.Gauge
	splitsRemaining, weightRemaining                                                           prometheus.Gauge

	acquisitions, losses, revocations, replans, writes *prometheus.CounterVec

	Releases, planned, failures, quarantines, cuts prometheus.Counter

	writeDur, replanDur, reconcileDur, drainDur, assignLatency prometheus.Histogram
	storeOpDur                                                 *prometheus.HistogramVec
}

// NewMetrics registers every family on reg with the constant label worker.
// A family whose registration fails is logged at warn and not recorded.
func NewMetrics(reg prometheus.Registerer, worker string, log *slog.Logger) *Metrics {
	if reg == nil {
		return nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"worker": worker}, reg)
	m := &Metrics{}
	register := func(c prometheus.Collector, name string) bool {
		if err := reg.Register(c); err != nil {
			log.Warn("metric registration failed; not recording it", "key", "coordination_"+name, "err", err)
			return false
		}
		return true
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "coordination", Name: name, Help: help})
		if !register(g, name) {
			return nil
		}
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "coordination", Name: name, Help: help})
		if !register(c, name) {
			return nil
		}
		return c
	}
	counterVec := func(name, help, label string, values ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "coordination", Name: name, Help: help}, []string{label})
		if !register(c, name) {
			return nil
		}
		for _, v := range values {
			c.WithLabelValues(v)
		}
		return c
	}
	hist := func(name, help string) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "coordination", Name: name, Help: help, Buckets: buckets})
		if !register(h, name) {
			return nil
		}
		return h
	}
	m.SplitsOwned = gauge("splits_owned", "Splits held by this worker, draining ones included.")
	m.splitsCompleted = gauge("splits_completed", "Completed splits in the view (fleet-wide).")
	m.splitsRemaining = gauge("splits_remaining", "Split records in the view that are not completed, quarantined ones included (fleet-wide).")
	m.weightRemaining = gauge("weight_remaining", "Total weight of those splits (fleet-wide).")
	m.splitsQuarantined = gauge("splits_quarantined", "Quarantined splits in the view.")
	m.liveWorkers = gauge("live_workers", "Members in the view, plus one if this worker's own key is not yet seen.")
	m.leader = gauge("leader", "1 while this worker leads.")
	m.idle = gauge("idle", "1 while this worker holds nothing.")
	m.splitsDraining = gauge("splits_draining", "Revocation entries, cancelled ones included.")
	m.acquisitions = counterVec("acquisitions_total", "Claims won, by kind.", "reason", "create", "reclaimed", "expired", "reassigned")
	m.losses = counterVec("split_losses_total", "Involuntary ends of tenancies.", "reason", "fenced", "starved", "revoked")
	m.Releases = counter("releases_total", "Splits handed back by Release or Depart whose write landed.")
	m.revocations = counterVec("revocations_total", "Revocations by outcome.", "outcome", "requested", "drained", "forced", "cancelled")
	m.planned = counter("splits_planned_total", "Progress records created by this worker while leading.")
	m.replans = counterVec("replans_total", "Planner runs by outcome.", "outcome", "ok", "noop", "error")
	m.failures = counter("split_failures_total", "Fail calls accepted for a held split at its epoch.")
	m.quarantines = counter("quarantines_total", "Transitions to quarantined observed by this worker.")
	m.cuts = counter("cuts_total", "Cut commits of runtime splits that landed (docs/protocol.md, \"Runtime split\").")
	m.writes = counterVec("writes_total", "CAS writes on progress records by outcome.", "outcome", "ok", "conflict", "error")
	m.writeDur = hist("write_duration_seconds", "Real duration of progress record writes.")
	m.replanDur = hist("replan_duration_seconds", "Real duration of a planner run through publish.")
	m.reconcileDur = hist("reconcile_duration_seconds", "Real duration of one reconcile.")
	m.storeOpDur = func() *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "coordination", Name: "store_op_duration_seconds", Help: "Every store call this worker makes.", Buckets: buckets}, []string{"op"})
		if !register(h, "store_op_duration_seconds") {
			return nil
		}
		for _, op := range []string{"get", "put", "delete", "list", "watch"} {
			h.WithLabelValues(op)
		}
		return h
	}()
	m.drainDur = hist("drain_duration_seconds", "Clock time from revocation request to drained.")
	m.assignLatency = hist("assignment_latency_seconds", "Clock time from being named to holding.")
	setGauge(m.idle, 1)
	setGauge(m.liveWorkers, 1) // this worker, its own key not yet seen
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "coordination", Name: "build_info", Help: "Always 1; the version label is the library's coordination.Version.",
		ConstLabels: prometheus.Labels{"version": coordination.Version}})
	if register(info, "build_info") {
		info.Set(1)
	}
	return m
}

func setGauge(g prometheus.Gauge, v float64) {
	if g != nil {
		g.Set(v)
	}
}

func incVec(c *prometheus.CounterVec, label string) {
	if c != nil {
		c.WithLabelValues(label).Inc()
	}
}

func inc(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

func observe(h prometheus.Histogram, d time.Duration) {
	if h != nil {
		h.Observe(d.Seconds())
	}
}

// storeOp observes one store operation of kind op that took d.
func (m *Metrics) storeOp(op string, d time.Duration) {
	if m != nil && m.storeOpDur != nil {
		m.storeOpDur.WithLabelValues(op).Observe(d.Seconds())
	}
}

// Owned sets the splits this worker holds (n) and whether it idles.
func (m *Metrics) Owned(n int) {
	if m != nil {
		setGauge(m.SplitsOwned, float64(n))
		idle := 0.0
		if n == 0 {
			idle = 1
		}
		setGauge(m.idle, idle)
	}
}

// Acquired counts a split gained, by how (reason).
func (m *Metrics) Acquired(reason string) {
	if m != nil {
		incVec(m.acquisitions, reason)
	}
}

// Lost counts a split lost, by why (reason).
func (m *Metrics) Lost(reason string) {
	if m != nil {
		incVec(m.losses, reason)
	}
}

// Released counts a split handed back.
func (m *Metrics) Released() {
	if m != nil {
		inc(m.Releases)
	}
}

// Revocation counts a revocation that ended with outcome.
func (m *Metrics) Revocation(outcome string) {
	if m != nil {
		incVec(m.revocations, outcome)
	}
}

// Draining sets how many revocations are open.
func (m *Metrics) Draining(n int) {
	if m != nil {
		setGauge(m.splitsDraining, float64(n))
	}
}

// PlannedRecords counts n split records a planner run wrote.
func (m *Metrics) PlannedRecords(n int) {
	if m != nil && m.planned != nil {
		m.planned.Add(float64(n))
	}
}

// Replan counts a planner run that ended with outcome after d.
func (m *Metrics) Replan(outcome string, d time.Duration) {
	if m != nil {
		incVec(m.replans, outcome)
		observe(m.replanDur, d)
	}
}

// Failed counts a split failed by its driver.
func (m *Metrics) Failed() {
	if m != nil {
		inc(m.failures)
	}
}

// Quarantined counts a split quarantined.
func (m *Metrics) Quarantined() {
	if m != nil {
		inc(m.quarantines)
	}
}

// CutLanded counts a cut commit that landed.
func (m *Metrics) CutLanded() {
	if m != nil {
		inc(m.cuts)
	}
}

// Write counts a fenced write that ended with outcome after d.
func (m *Metrics) Write(outcome string, d time.Duration) {
	if m != nil {
		incVec(m.writes, outcome)
		observe(m.writeDur, d)
	}
}

// Reconciled observes a reconcile listing that took d.
func (m *Metrics) Reconciled(d time.Duration) {
	if m != nil {
		observe(m.reconcileDur, d)
	}
}

// Drained observes a revocation drained after d.
func (m *Metrics) Drained(d time.Duration) {
	if m != nil {
		observe(m.drainDur, d)
	}
}

// Latency observes the time from an assignment naming a split to its claim.
func (m *Metrics) Latency(d time.Duration) {
	if m != nil {
		observe(m.assignLatency, d)
	}
}

// Tallies sets the fleet-wide gauges of the worker's view. Every worker
// exports them; see docs/metrics.md for the PromQL that reads
// one value per fleet.
func (m *Metrics) Tallies(completed, quarantined int, remaining, remainingWeight int64) {
	if m != nil {
		setGauge(m.splitsCompleted, float64(completed))
		setGauge(m.splitsQuarantined, float64(quarantined))
		setGauge(m.splitsRemaining, float64(remaining))
		setGauge(m.weightRemaining, float64(remainingWeight))
	}
}

// Leading sets whether this worker leads.
func (m *Metrics) Leading(on bool) {
	if m != nil {
		v := 0.0
		if on {
			v = 1
		}
		setGauge(m.leader, v)
	}
}

// Workers sets how many live members the leader sees.
func (m *Metrics) Workers(n int) {
	if m != nil {
		setGauge(m.liveWorkers, float64(n))
	}
}
