package driver_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// badPlanner plans a split whose id the library refuses: a Fatal of the
// coordinator, the kind of failure every worker of a job meets at once.
type badPlanner struct{}

func (badPlanner) Fingerprint() string { return "bad-v1" }
func (badPlanner) Plan(context.Context, coordination.PlanContext) (coordination.SplitPlan, error) {
	return coordination.SplitPlan{Splits: []coordination.PlannedSplit{{Spec: coordination.SplitSpec{ID: "not.valid", Weight: 1}}}}, nil
}

// TestRunReturnsAFailureOnce: a real coordinator that fails Fatal returns
// its failure again from Depart; Run's error says it once, not joined with
// "depart failed: <the same error>", and the coordinator's log says that it
// failed without the text (above Debug), which its caller prints: one
// failure, printed once per worker.
func TestRunReturnsAFailureOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		cfg := testkit.HarnessConfig()
		cfg.InstanceID = "w1"
		cfg.Logger = r.log
		coord, err := actors.Spawn(r.e, r.st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := newPaceSource()
		err = driver.Run(t.Context(), coord, src, driver.WithPlanner(badPlanner{}))
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "not.valid") {
			t.Fatalf("Run = %v, want the Fatal naming the bad split id", err)
		}
		if strings.Contains(err.Error(), "depart failed") {
			t.Errorf("Run's error repeats the failure as a Depart failure: %v", err)
		}
		reason := err.Error()
		if i := strings.Index(reason, "not.valid"); strings.Contains(reason[i+1:], "not.valid") {
			t.Errorf("Run's error names the failure more than once: %v", err)
		}
		logs := r.logs.String()
		if !strings.Contains(logs, "level=ERROR msg=\"coordinator failed") {
			t.Errorf("no log line says the coordinator failed:\n%s", logs)
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "not.valid") && !strings.Contains(line, "level=DEBUG") {
				t.Errorf("the failure's text was logged as well as returned: %s", line)
			}
		}
	})
}
