package coordctl

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// jobEntries builds listings: a final plan of 4 splits, w1 live holding
// a, b owned by w2 whose session ended, c completed, d quarantined.
func jobEntries() (durable, ephemeral []store.Entry) {
	const fpText = "status-test:v1"
	fp := protocol.Fingerprint(fpText)
	plan := protocol.NewPlan(fpText, 0)
	plan.Finality, plan.Planned, plan.Generation = coordination.PlanFinal, 4, 3
	put := func(key string, v []byte) store.Entry { return store.Entry{Key: key, Value: v, Revision: 1} }
	a := protocol.SeedSplit("a", fp, 10, nil, 0).Claim("w1", "n1", 1, false, 0)
	b := protocol.SeedSplit("b", fp, 20, nil, 0).Claim("w2", "old", 1, false, 0)
	c := protocol.SeedSplit("c", fp, 30, nil, 0).Claim("w1", "n1", 1, false, 0).Complete(0)
	d := protocol.SeedSplit("d", fp, 40, nil, 0).Claim("w2", "old", 1, false, 0).Fail(1, 0)
	durable = []store.Entry{
		put(protocol.KeyPlan, protocol.EncodePlan(plan)),
		put(protocol.SplitKey("b"), protocol.EncodeSplit(b)), put(protocol.SplitKey("a"), protocol.EncodeSplit(a)),
		put(protocol.SplitKey("c"), protocol.EncodeSplit(c)), put(protocol.SplitKey("d"), protocol.EncodeSplit(d)),
		put(protocol.AssignKey("w1"), protocol.EncodeAssignment(protocol.AssignmentRecord{Generation: 3, Splits: []coordination.SplitID{"a", "b"}})),
	}
	ephemeral = []store.Entry{
		put(protocol.KeyLeader, protocol.EncodeLeader(protocol.LeaderRecord{Owner: "w1", Nonce: "n1", Generation: 3})),
		put(protocol.WorkerKey("w1"), protocol.EncodePresence(protocol.PresenceRecord{Nonce: "n1", MaxInFlight: 8})),
	}
	return durable, ephemeral
}

func TestStatusOfCountsSplitsByStateAndWeight(t *testing.T) {
	durable, ephemeral := jobEntries()
	j, err := parseJob(durable, ephemeral, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := statusOf("j", j, true)
	want := splitTotals{Runnable: 1, RunnableWeight: 20, Held: 1, HeldWeight: 10, Completed: 1, Quarantined: 1, Total: 4, Remaining: 3,
		TotalWeight: 100, CompletedWeight: 30, RemainingWeight: 70, QuarantinedWeight: 40}
	if s.Splits != want {
		t.Fatalf("totals = %+v\nwant   %+v", s.Splits, want)
	}
	if s.State != stateRunning || s.Leader == nil || s.Leader.Instance != "w1" || s.Finality != "final" || s.Generation != 3 {
		t.Fatalf("status = %+v, want running, final, generation 3, leader w1", s)
	}
	if len(s.Workers) != 1 || s.Workers[0] != (workerStatus{Instance: "w1", Held: 1, HeldWeight: 10, Assigned: 2, MaxInFlight: 8, Leader: true}) {
		t.Fatalf("workers = %+v, want w1 holding a (weight 10), 2 assigned, 8 lanes, leader", s.Workers)
	}
	if len(s.Quarantined) != 1 || s.Quarantined[0].Split != "d" || s.Quarantined[0].Attempts != 1 {
		t.Fatalf("quarantined = %+v, want d after 1 attempt", s.Quarantined)
	}
	var rows []string
	for _, r := range s.Rows {
		rows = append(rows, string(r.Split)+":"+r.Status+":"+r.Owner)
	}
	if got := strings.Join(rows, " "); got != "a:held:w1 b:runnable:w2 c:completed:w1 d:quarantined:" {
		t.Fatalf("rows = %s (b's owner w2 has no live session, so b is runnable)", got)
	}
	var b strings.Builder
	if err := s.writeTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"state        running", "w1 (leader)  1     10      2         8", "remaining    3      70 (70.0% of the weight)", "d            1         40"} {
		if !strings.Contains(b.String(), line) {
			t.Fatalf("table lacks %q:\n%s", line, b.String())
		}
	}
}

func TestStatusOfJudgesTheVerdict(t *testing.T) {
	durable, _ := jobEntries()
	var terminal []store.Entry
	for _, e := range durable {
		if e.Key != protocol.SplitKey("a") && e.Key != protocol.SplitKey("b") {
			terminal = append(terminal, e)
		}
	}
	j, err := parseJob(terminal, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := statusOf("j", j, false); s.State != stateRunning {
		t.Fatalf("state = %s with 2 of 4 planned records, want running", s.State)
	}
	j.plan.Planned = 2
	if s := statusOf("j", j, false); s.State != stateStalled || s.Leader != nil || len(s.Workers) != 0 {
		t.Fatalf("status = %+v, want stalled (d quarantined), no leader, no workers", s)
	}
}

func TestParseJobNamesTheBadRecord(t *testing.T) {
	if _, err := parseJob(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "no job.plan record") {
		t.Fatalf("parseJob without a plan = %v, want an error naming job.plan", err)
	}
	durable, _ := jobEntries()
	durable = append(durable, store.Entry{Key: protocol.SplitKey("e"), Value: []byte("garbage"), Revision: 2})
	if _, err := parseJob(durable, nil, nil); err == nil || !strings.Contains(err.Error(), "job.split.e") {
		t.Fatalf("parseJob with a corrupt split record = %v, want an error naming job.split.e", err)
	}
}

func TestStatusCountsResidualsAndShowsTheirParents(t *testing.T) {
	durable, ephemeral := jobEntries()
	fp := protocol.Fingerprint("status-test:v1")
	c, _ := protocol.FreshProgress("a", fp, "w1", 1, 0).NextCut([]byte("r"), 7)
	durable = append(durable, store.Entry{Key: protocol.SplitKey(c.ID), Value: protocol.EncodeSplit(c.ResidualSplit("a", fp, 0)), Revision: 2})
	j, err := parseJob(durable, ephemeral, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := statusOf("j", j, true)
	if s.Splits.Residuals != 1 || s.Splits.ResidualWeight != 7 || s.Splits.Total != 5 {
		t.Fatalf("totals = %+v, want 1 residual of weight 7 among 5 splits", s.Splits)
	}
	var out strings.Builder
	if err := s.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if !strings.Contains(table, "residuals    1") || !strings.Contains(table, "PARENT") {
		t.Fatalf("table lacks the residual count or the PARENT column:\n%s", table)
	}
	found := false
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, string(c.ID)+" ") {
			found = true
			if !strings.HasSuffix(strings.TrimSpace(line), " a") {
				t.Fatalf("the residual's row does not name its parent a: %q", line)
			}
		}
	}
	if !found {
		t.Fatalf("no row for the residual %s:\n%s", c.ID, table)
	}
}
