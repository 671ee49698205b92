package testkit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
)

// Held is one split in a member's folded view.
type Held struct {
	Spec  coordination.SplitSpec
	Epoch coordination.LeaseEpoch
	// Carried is the progress the Gained event carried (nil if none).
	Carried *coordination.SplitProgress
	// Committed is the progress of this tenancy's last commit that returned
	// nil (nil if none).
	Committed *coordination.SplitProgress
	// Revoked is set by RevokeRequested.
	Revoked bool

	worked          bool   // the work policy ran for this tenancy
	workedWith      Work   // the policy it ran with (a new policy runs again)
	streamedAt      int    // the fleet step of the last WorkStream commit
	triedAt         int    // 1 + the fleet step of the last Retryable work commit
	revokeActed     bool   // the revoke policy ran for the current request
	revokeActedWith Revoke // the policy it ran with (a new policy runs again)

	rng        *heldRange                 // a ranged split's records (RangeDescriptor), narrowed by its cuts; nil otherwise
	cutAsk     *coordination.CutRequested // the latest cut request not yet acted on
	pendingCut *coordination.Cut          // a cut decided whose CommitCut has not returned nil
	pendingAt  int64                      // the position the pending cut is committed at
}

// Cut returns the tenancy's current committed progress: the last landed
// commit, else the carried progress.
func (h *Held) Cut() *coordination.SplitProgress {
	if h.Committed != nil {
		return h.Committed
	}
	return h.Carried
}

// Member is one fleet member: a real coordinator, its fault wrapper, its
// policy and the folded view of the events it emitted. Its fields survive a
// crash; [Fleet.Start] with the same id starts a new incarnation and resets
// the folded view (the event log keeps every incarnation).
type Member struct {
	id       string // the fleet's name for the member
	instance string // its InstanceID (equal to id except for twins)
	f        *Fleet

	coord    *actors.Coordinator
	store    *FaultStore
	registry *prometheus.Registry
	cfg      coordination.Config
	waker    *coordination.Waker
	// Policy decides what the fleet does for the member on every pump; a
	// test may change it at any time.
	Policy Policy

	incarnation int
	log         []coordination.Event
	held        map[coordination.SplitID]*Held
	revokes     []coordination.SplitID // every RevokeRequested, in order
	quarantines map[coordination.SplitID]uint32
	losses      int
	verdict     coordination.Event
	err         error
	crashed     bool
	departed    bool
	calls       []CallRecord
	committed   map[coordination.SplitID]coordination.SplitProgress // last landed commit, all tenancies
	cuts        int                                                 // cuts landed, all incarnations
}

// CallRecord is one seam call a member made and its result.
type CallRecord struct {
	Op    string // "commit", "fail", "release", "release-drained", "decline", "depart"
	Split coordination.SplitID
	Err   error
}

func (m *Member) reset(c *actors.Coordinator, fs *FaultStore, cfg coordination.Config) {
	m.coord, m.store, m.cfg = c, fs, cfg
	m.waker = coordination.NewWaker()
	m.incarnation++
	m.held = make(map[coordination.SplitID]*Held)
	m.quarantines = make(map[coordination.SplitID]uint32)
	m.verdict, m.err = nil, nil
	m.crashed, m.departed = false, false
}

// ID returns the member's name in the fleet (its InstanceID, except for a
// twin started with [Fleet.StartTwin]).
func (m *Member) ID() string { return m.id }

// InstanceID returns the member's InstanceID.
func (m *Member) InstanceID() string { return m.instance }

// Coordinator returns the current incarnation's coordinator.
func (m *Member) Coordinator() *actors.Coordinator { return m.coord }

// Store returns the current incarnation's fault wrapper.
func (m *Member) Store() *FaultStore { return m.store }

// Metrics returns the metrics registry the fleet made for the current
// incarnation. It stays empty if a mutator replaced Config.Metrics.
func (m *Member) Metrics() *prometheus.Registry { return m.registry }

// Metric returns the value of the counter or gauge coordination_<name> in
// the current incarnation's registry whose labels include every
// label=value pair given as alternating arguments; 0 if there is none.
func (m *Member) Metric(name string, labels ...string) float64 {
	if m.registry == nil {
		return 0
	}
	fams, err := m.registry.Gather()
	if err != nil {
		m.f.Fail("testkit: gather metrics of %s: %v", m.id, err)
	}
	for _, fam := range fams {
		if fam.GetName() != "coordination_"+name {
			continue
		}
		sum := 0.0
		for _, mt := range fam.GetMetric() {
			if !hasLabels(mt.GetLabel(), labels) {
				continue
			}
			switch {
			case mt.Counter != nil:
				sum += mt.GetCounter().GetValue()
			case mt.Gauge != nil:
				sum += mt.GetGauge().GetValue()
			}
		}
		return sum
	}
	return 0
}

func hasLabels(have []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, lp := range have {
			if lp.GetName() == want[i] && lp.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Config returns the current incarnation's configuration.
func (m *Member) Config() coordination.Config { return m.cfg }

// Alive reports whether the current incarnation runs (not crashed, not
// departed). A member whose coordinator failed is still alive.
func (m *Member) Alive() bool { return m.coord != nil && !m.crashed && !m.departed }

// Log returns every event the member emitted, all incarnations, in order.
func (m *Member) Log() []coordination.Event { return append([]coordination.Event(nil), m.log...) }

// Held returns the splits the member holds, by its folded view.
func (m *Member) Held() map[coordination.SplitID]Held {
	out := make(map[coordination.SplitID]Held, len(m.held))
	for id, h := range m.held {
		out[id] = *h
	}
	return out
}

// HeldIDs returns the ids of the held splits, sorted.
func (m *Member) HeldIDs() []coordination.SplitID {
	ids := make([]coordination.SplitID, 0, len(m.held))
	for id := range m.held {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Holds reports whether the member holds split.
func (m *Member) Holds(split coordination.SplitID) bool { _, ok := m.held[split]; return ok }

// Tenancy returns the held split's view entry.
func (m *Member) Tenancy(split coordination.SplitID) (Held, bool) {
	h, ok := m.held[split]
	if !ok {
		return Held{}, false
	}
	return *h, true
}

// RevokeRequests returns every RevokeRequested split, in order (all
// incarnations).
func (m *Member) RevokeRequests() []coordination.SplitID {
	return append([]coordination.SplitID(nil), m.revokes...)
}

// Quarantines returns the splits the current incarnation saw quarantined,
// with attempts.
func (m *Member) Quarantines() map[coordination.SplitID]uint32 {
	out := make(map[coordination.SplitID]uint32, len(m.quarantines))
	for id, a := range m.quarantines {
		out[id] = a
	}
	return out
}

// Losses returns how many Lost events the member emitted (all incarnations).
func (m *Member) Losses() int { return m.losses }

// Verdict returns the member's AllComplete or Stalled event (nil if none).
func (m *Member) Verdict() coordination.Event { return m.verdict }

// Err returns the latched error Poll returned (nil if none).
func (m *Member) Err() error { return m.err }

// LastCommitted returns the progress of the member's last commit of split
// that returned nil, across tenancies and incarnations.
func (m *Member) LastCommitted(split coordination.SplitID) (coordination.SplitProgress, bool) {
	p, ok := m.committed[split]
	return p, ok
}

// Calls returns every seam call the fleet made for this member.
func (m *Member) Calls() []CallRecord { return append([]CallRecord(nil), m.calls...) }

// String renders the member's folded view.
func (m *Member) String() string {
	var b strings.Builder
	state := "live"
	switch {
	case m.crashed:
		state = "crashed"
	case m.departed:
		state = "departed"
	}
	fmt.Fprintf(&b, "member %s#%d %s", m.id, m.incarnation, state)
	for _, id := range m.HeldIDs() {
		h := m.held[id]
		fmt.Fprintf(&b, " %s@%d%s", id, h.Epoch, progressString(h.Cut()))
		if h.Revoked {
			b.WriteString("(revoked)")
		}
	}
	if m.verdict != nil {
		fmt.Fprintf(&b, " verdict %#v", m.verdict)
	}
	if m.err != nil {
		fmt.Fprintf(&b, " err %v", m.err)
	}
	return b.String()
}

// pump polls the member once, folds the events, and applies its policy. It
// reports whether anything happened.
func (m *Member) pump() bool {
	evs, err := m.coord.Poll()
	if err != nil && coordination.KindOf(err) != coordination.Fatal {
		m.f.Fail("testkit: member %s: Poll returned %v; Poll never returns Retryable or Fenced", m.id, err)
	}
	if err != nil && len(evs) > 0 {
		m.f.Fail("testkit: member %s: Poll returned events with an error", m.id)
	}
	if err != nil && m.err == nil {
		m.err = err
	}
	for _, ev := range evs {
		m.fold(ev)
	}
	acted := m.applyPolicy()
	m.reportRemaining()
	return len(evs) > 0 || acted
}

func (m *Member) fold(ev coordination.Event) {
	m.log = append(m.log, ev)
	m.f.checker.EventAs(m.id, m.instance, ev)
	switch e := ev.(type) {
	case coordination.Gained:
		h := &Held{Spec: e.Split, Epoch: e.Epoch, Carried: e.Progress}
		if lo, hi, ok := rangeOf(e.Split.Descriptor); ok {
			h.rng = &heldRange{lo, hi}
		}
		m.held[e.Split.ID] = h
	case coordination.CutRequested:
		if h := m.held[e.Split]; h != nil {
			ask := e
			h.cutAsk = &ask
		}
	case coordination.Lost:
		m.losses++
		delete(m.held, e.Split)
	case coordination.RevokeRequested:
		m.revokes = append(m.revokes, e.Split)
		if h := m.held[e.Split]; h != nil {
			h.Revoked, h.revokeActed = true, false
		}
	case coordination.Quarantined:
		m.quarantines[e.Split] = e.Attempts
	case coordination.AllComplete, coordination.Stalled:
		m.verdict = ev
	}
}

func (m *Member) record(op string, split coordination.SplitID, err error) {
	m.calls = append(m.calls, CallRecord{Op: op, Split: split, Err: err})
	if op != "depart" && coordination.KindOf(err) == coordination.Fatal && m.err == nil && !m.Policy.ExpectFatal {
		m.f.Fail("testkit: member %s: %s %s returned Fatal: %v", m.id, op, split, err)
	}
}

// surrender drops split from the folded view after a voluntary end.
func (m *Member) surrender(split coordination.SplitID) {
	delete(m.held, split)
	m.f.checker.Surrendered(m.id, split)
}

// Commit commits p for a held split and records the result; a nil result
// updates the folded view (a completed commit ends the tenancy).
func (m *Member) Commit(split coordination.SplitID, p coordination.SplitProgress) error {
	err := m.coord.Commit(split, p)
	m.record("commit", split, err)
	if err == nil {
		if m.committed == nil {
			m.committed = make(map[coordination.SplitID]coordination.SplitProgress)
		}
		m.committed[split] = p
	}
	if h := m.held[split]; h != nil {
		switch {
		case err == nil && p.Completed:
			m.surrender(split)
		case err == nil:
			cp := p
			h.Committed = &cp
		case coordination.KindOf(err) == coordination.Fenced:
			// The split is gone; a Lost follows when a peer took it.
			m.f.checker.Surrendered(m.id, split)
		}
	}
	return err
}

// Fail reports split as poison under its held epoch (0 when the folded view
// does not hold it), records the result and drops it from the folded view.
func (m *Member) Fail(split coordination.SplitID, reason string) error {
	var epoch coordination.LeaseEpoch
	if h := m.held[split]; h != nil {
		epoch = h.Epoch
	}
	err := m.coord.Fail(split, epoch, reason)
	m.record("fail", split, err)
	if m.held[split] != nil {
		m.surrender(split)
	}
	return err
}

// Release hands splits back, records the result and drops them from the
// folded view.
func (m *Member) Release(splits ...coordination.SplitID) error {
	return m.handBack("release", m.coord.Release(splits...), splits)
}

// ReleaseDrained hands drained splits back, records the result and drops
// them from the folded view.
func (m *Member) ReleaseDrained(splits ...coordination.SplitID) error {
	return m.handBack("release-drained", m.coord.ReleaseDrained(splits...), splits)
}

// handBack records a hand-back call's result err for each of splits, drops
// the held ones from the folded view, and returns err.
func (m *Member) handBack(op string, err error, splits []coordination.SplitID) error {
	for _, s := range splits {
		m.record(op, s, err)
		if m.held[s] != nil {
			m.surrender(s)
		}
	}
	return err
}

// DeclineRevoke declines a revocation and records the result.
func (m *Member) DeclineRevoke(split coordination.SplitID) error {
	err := m.coord.DeclineRevoke(split)
	m.record("decline", split, err)
	return err
}

// Depart makes the member leave the job for good, handing back everything it
// holds by its folded view, and records the result.
func (m *Member) Depart() error {
	if !m.Alive() {
		return nil
	}
	held := m.HeldIDs()
	err := m.coord.Depart(held...)
	m.record("depart", "", err)
	for _, s := range held {
		m.surrender(s)
	}
	m.departed = true
	m.f.settle()
	return err
}
