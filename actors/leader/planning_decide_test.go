package leader

import (
	"errors"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

func TestPlanOutcomeLabel(t *testing.T) {
	want := map[planOutcome]string{planChanged: "ok", planUnchanged: "noop", planFailed: "error", planLost: "error", planFatal: "error", planDiscarded: "error"}
	for o, l := range want {
		if got := o.label(); got != l {
			t.Errorf("outcome %d: label %q, want %q", o, got, l)
		}
	}
}

func TestJudgePlannerErr(t *testing.T) {
	panicErr := coordination.Errorf(coordination.Fatal, "planner panic: boom")
	tests := []struct {
		name     string
		err      error
		panicked bool
		want     planOutcome
		reason   string
	}{
		{"a panic stays the panic's Fatal", panicErr, true, planFatal, "planner panic: boom"},
		{"the planner's own Fatal is named as the planner's", coordination.Errorf(coordination.Fatal, "bad config"), false, planFatal, "planner: bad config"},
		{"a Fatal that reads like a panic is still the planner's", coordination.Errorf(coordination.Fatal, "planner panic: lie"), false, planFatal, "planner: planner panic: lie"},
		{"a transient error retries", coordination.Errorf(coordination.Retryable, "listing"), false, planFailed, "listing"},
		{"an untyped error retries", errors.New("eof"), false, planFailed, "eof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judgePlannerErr(tt.err, tt.panicked)
			if got != tt.want || worker.ReasonOf(err) != tt.reason {
				t.Fatalf("got (%v, %q), want (%v, %q)", got, worker.ReasonOf(err), tt.want, tt.reason)
			}
		})
	}
}

func TestJudgeSeedAndStoreErr(t *testing.T) {
	fatal := coordination.Errorf(coordination.Fatal, "value too large")
	transient := coordination.Errorf(coordination.Retryable, "timeout")
	tests := []struct {
		name    string
		judge   func(error, bool) (planOutcome, error)
		err     error
		ended   bool
		want    planOutcome
		wantErr error
	}{
		{"seeding after the lead ended is discarded", judgeSeedErr, fatal, true, planDiscarded, nil},
		{"a Fatal seeding error is Fatal", judgeSeedErr, fatal, false, planFatal, fatal},
		{"a transient seeding error retries, logged by the run", judgeSeedErr, transient, false, planFailed, nil},
		{"a store error after the lead ended is discarded", judgeStoreErr, transient, true, planDiscarded, nil},
		{"a store error retries with its error", judgeStoreErr, transient, false, planFailed, transient},
		{"a Fatal store error (a value above its cap) is Fatal", judgeStoreErr, fatal, false, planFatal, fatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.judge(tt.err, tt.ended)
			if got != tt.want || err != tt.wantErr {
				t.Fatalf("got (%v, %v), want (%v, %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestJudgeLostPublish(t *testing.T) {
	tests := []struct {
		name   string
		getErr error
		found  bool
		want   planOutcome
		fatal  bool
	}{
		{"a newer leader wrote the plan", nil, true, planLost, false},
		{"a read error still counts as lost", errors.New("eof"), false, planLost, false},
		{"a deleted plan is Fatal", nil, false, planFatal, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judgeLostPublish(tt.getErr, tt.found)
			if got != tt.want || (coordination.KindOf(err) == coordination.Fatal) != tt.fatal {
				t.Fatalf("got (%v, %v), want (%v, fatal %v)", got, err, tt.want, tt.fatal)
			}
		})
	}
}

func TestJudgePublished(t *testing.T) {
	open := protocol.PlanRecord{Planned: 3, Finality: coordination.PlanOpen}
	final := protocol.PlanRecord{Planned: 3, Finality: coordination.PlanFinal}
	more := protocol.PlanRecord{Planned: 4, Finality: coordination.PlanOpen}
	tests := []struct {
		name     string
		created  int
		want     protocol.PlanRecord
		base     protocol.PlanRecord
		outcome  planOutcome
		finalize bool
	}{
		{"nothing new is unchanged", 0, open, open, planUnchanged, false},
		{"created splits change it", 2, open, open, planChanged, false},
		{"a recount changes it", 0, more, open, planChanged, false},
		{"finality changes it and finalizes", 0, final, open, planChanged, true},
		{"a final plan republished does not finalize again", 0, final, final, planUnchanged, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, f := judgePublished(tt.created, tt.want, tt.base)
			if o != tt.outcome || f != tt.finalize {
				t.Fatalf("got (%v, %v), want (%v, %v)", o, f, tt.outcome, tt.finalize)
			}
		})
	}
}
