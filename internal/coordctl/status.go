package coordctl

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// Job states of [status.State].
const (
	stateRunning  = "running"
	stateComplete = "complete"
	stateStalled  = "stalled"
)

// Split states of a split row: the record's status, with runnable records
// owned by a live session shown as held.
const (
	splitRunnable    = "runnable"
	splitHeld        = "held"
	splitCompleted   = "completed"
	splitQuarantined = "quarantined"
)

// status is what coordctl status shows; its JSON form is the -json output.
type status struct {
	Job         string           `json:"job"`
	Fingerprint string           `json:"fingerprint"`
	Finality    string           `json:"finality"`
	Generation  uint64           `json:"generation"`
	Planned     uint64           `json:"planned"`
	State       string           `json:"state"`
	Leader      *leaderStatus    `json:"leader"`
	Workers     []workerStatus   `json:"workers"`
	Splits      splitTotals      `json:"splits"`
	Quarantined []quarantineRow  `json:"quarantined"`
	Rows        []splitRow       `json:"split_rows,omitempty"`
	owners      map[string]owner // split id -> owner, for watch's moves
}

// owner is a split's placement as watch compares it between refreshes.
type owner struct {
	instance string
	status   string
}

// leaderStatus is the live leader.
type leaderStatus struct {
	Instance   string `json:"instance"`
	Generation uint64 `json:"generation"`
}

// workerStatus is one live worker. MaxInFlight 0 means the default.
type workerStatus struct {
	Instance    string `json:"instance"`
	Held        int    `json:"held"`
	HeldWeight  uint64 `json:"held_weight"`
	Assigned    int    `json:"assigned"`
	MaxInFlight uint32 `json:"max_in_flight"`
	Leader      bool   `json:"leader"`
}

// splitTotals counts splits and their weight by state.
type splitTotals struct {
	Runnable          int    `json:"runnable"`
	RunnableWeight    uint64 `json:"runnable_weight"`
	HeldWeight        uint64 `json:"held_weight"`
	Held              int    `json:"held"`
	Completed         int    `json:"completed"`
	Quarantined       int    `json:"quarantined"`
	Total             int    `json:"total"`
	Remaining         int    `json:"remaining"`
	TotalWeight       uint64 `json:"total_weight"`
	CompletedWeight   uint64 `json:"completed_weight"`
	RemainingWeight   uint64 `json:"remaining_weight"`
	QuarantinedWeight uint64 `json:"quarantined_weight"`
	// Residuals counts the splits cut off running splits at runtime
	// (docs/protocol.md, "Runtime split"), whatever their state; they are
	// counted in the totals above too.
	Residuals      int    `json:"residuals"`
	ResidualWeight uint64 `json:"residual_weight"`
}

// quarantineRow is one quarantined split.
type quarantineRow struct {
	Split    coordination.SplitID `json:"split"`
	Attempts uint32               `json:"attempts"`
	Weight   uint64               `json:"weight"`
	Epoch    uint64               `json:"epoch"`
}

// splitRow is one split for -splits. Owner is the record's owner (a
// runnable split may name an owner whose session ended); Watermark is the
// committed one, null before the first commit.
type splitRow struct {
	Split     coordination.SplitID `json:"split"`
	Status    string               `json:"status"`
	Owner     string               `json:"owner"`
	Epoch     uint64               `json:"epoch"`
	Attempts  uint32               `json:"attempts"`
	Watermark *int64               `json:"watermark"`
	Weight    uint64               `json:"weight"`
	// Parent is the split a residual was cut from; "" for a planned split.
	Parent coordination.SplitID `json:"parent,omitempty"`
}

// statusOf summarises a reading of the job named name; rows adds one row
// per split.
func statusOf(name string, j *job, rows bool) status {
	s := status{
		Job:         name,
		Fingerprint: j.plan.Fingerprint,
		Finality:    "open",
		Generation:  j.plan.Generation,
		Planned:     j.plan.Planned,
		Workers:     []workerStatus{},
		Quarantined: []quarantineRow{},
		owners:      map[string]owner{},
	}
	if j.plan.Finality == coordination.PlanFinal {
		s.Finality = "final"
	}
	if j.leader != nil {
		s.Leader = &leaderStatus{Instance: j.leader.Owner, Generation: j.leader.Generation}
	}
	byWorker := map[string]*workerStatus{}
	for name, p := range j.workers {
		w := &workerStatus{Instance: name, MaxInFlight: p.MaxInFlight, Assigned: len(j.assign[name].Splits)}
		w.Leader = s.Leader != nil && s.Leader.Instance == name
		byWorker[name] = w
	}
	t := &s.Splits
	for _, e := range j.splits {
		r := e.rec
		t.Total++
		t.TotalWeight += r.Weight
		if r.Parent != "" {
			t.Residuals++
			t.ResidualWeight += r.Weight
		}
		st := splitRunnable
		switch {
		case r.Status == protocol.StatusCompleted:
			st = splitCompleted
			t.Completed++
			t.CompletedWeight += r.Weight
		case r.Status == protocol.StatusQuarantined:
			st = splitQuarantined
			t.Quarantined++
			t.QuarantinedWeight += r.Weight
			s.Quarantined = append(s.Quarantined, quarantineRow{Split: r.ID, Attempts: r.Attempts, Weight: r.Weight, Epoch: r.Epoch})
		case j.held(r):
			st = splitHeld
			t.Held++
			t.HeldWeight += r.Weight
			byWorker[r.Owner].Held++
			byWorker[r.Owner].HeldWeight += r.Weight
		default:
			t.Runnable++
			t.RunnableWeight += r.Weight
		}
		s.owners[string(r.ID)] = owner{instance: r.Owner, status: st}
		if rows {
			row := splitRow{Split: r.ID, Status: st, Owner: r.Owner, Epoch: r.Epoch, Attempts: r.Attempts, Weight: r.Weight, Parent: r.Parent}
			if p, ok := j.progress[r.ID]; ok {
				row.Watermark = p.Watermark
			}
			s.Rows = append(s.Rows, row)
		}
	}
	t.Remaining = t.Total - t.Completed
	t.RemainingWeight = t.TotalWeight - t.CompletedWeight
	for _, w := range byWorker {
		s.Workers = append(s.Workers, *w)
	}
	slices.SortFunc(s.Workers, func(a, b workerStatus) int { return strings.Compare(a.Instance, b.Instance) })
	s.State = stateRunning
	if s.Finality == "final" && uint64(t.Total) >= s.Planned && t.Completed+t.Quarantined == t.Total {
		s.State = stateComplete
		if t.Quarantined > 0 {
			s.State = stateStalled
		}
	}
	return s
}

// writeJSON writes s as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTable writes s as the status tables.
func (s status) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := s.Splits
	leader := "none (election pending)"
	switch {
	case s.State != stateRunning && s.Leader == nil:
		leader = "none (the job reached its verdict)"
	case len(s.Workers) == 0 && s.Leader == nil:
		leader = "none (no live workers)"
	}
	if s.Leader != nil {
		leader = fmt.Sprintf("%s (generation %d)", s.Leader.Instance, s.Leader.Generation)
	}
	fmt.Fprintf(tw, "job\t%s\n", s.Job)
	fmt.Fprintf(tw, "fingerprint\t%s\n", s.Fingerprint)
	fmt.Fprintf(tw, "plan\t%s, generation %d, %d splits planned\n", s.Finality, s.Generation, s.Planned)
	fmt.Fprintf(tw, "state\t%s\n", s.State)
	fmt.Fprintf(tw, "leader\t%s\n", leader)
	fmt.Fprintf(tw, "workers\t%d live\n", len(s.Workers))
	if len(s.Workers) > 0 {
		fmt.Fprintf(tw, "\nWORKER\tHELD\tWEIGHT\tASSIGNED\tLANES\n")
		for _, wk := range s.Workers {
			lanes := "default"
			if wk.MaxInFlight > 0 {
				lanes = fmt.Sprint(wk.MaxInFlight)
			}
			name := wk.Instance
			if wk.Leader {
				name += " (leader)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", name, wk.Held, wk.HeldWeight, wk.Assigned, lanes)
		}
	}
	fmt.Fprintf(tw, "\nSPLITS\tCOUNT\tWEIGHT\n")
	fmt.Fprintf(tw, "runnable\t%d\t%d\n", t.Runnable, t.RunnableWeight)
	fmt.Fprintf(tw, "held\t%d\t%d\n", t.Held, t.HeldWeight)
	fmt.Fprintf(tw, "completed\t%d\t%d\n", t.Completed, t.CompletedWeight)
	fmt.Fprintf(tw, "quarantined\t%d\t%d\n", t.Quarantined, t.QuarantinedWeight)
	fmt.Fprintf(tw, "total\t%d\t%d\n", t.Total, t.TotalWeight)
	fmt.Fprintf(tw, "remaining\t%d\t%d (%s of the weight)\n", t.Remaining, t.RemainingWeight, percent(t.RemainingWeight, t.TotalWeight))
	if t.Residuals > 0 {
		fmt.Fprintf(tw, "residuals\t%d\t%d (cut off running splits at runtime; counted above)\n", t.Residuals, t.ResidualWeight)
	}
	if len(s.Quarantined) > 0 {
		fmt.Fprintf(tw, "\nQUARANTINED\tATTEMPTS\tWEIGHT\n")
		for _, q := range s.Quarantined {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", q.Split, q.Attempts, q.Weight)
		}
	}
	if len(s.Rows) > 0 {
		parents := t.Residuals > 0
		head := "\nSPLIT\tSTATUS\tOWNER\tEPOCH\tATTEMPTS\tWATERMARK\tWEIGHT"
		if parents {
			head += "\tPARENT"
		}
		fmt.Fprintln(tw, head)
		for _, r := range s.Rows {
			own, wm := r.Owner, "-"
			if own == "" {
				own = "-"
			}
			if r.Watermark != nil {
				wm = fmt.Sprint(*r.Watermark)
			}
			row := fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s\t%d", r.Split, r.Status, own, r.Epoch, r.Attempts, wm, r.Weight)
			if parents {
				row += "\t" + cmp.Or(string(r.Parent), "-")
			}
			fmt.Fprintln(tw, row)
		}
	}
	return tw.Flush()
}

// percent renders part/whole as a percentage with one decimal ("-" when
// whole is 0).
func percent(part, whole uint64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
