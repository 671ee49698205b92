package splitwriter

import (
	"errors"
	"testing"

	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

func TestJudgeProgressFence(t *testing.T) {
	tests := []struct {
		name string
		got  protocol.ProgressRecord
		res  fenceResult
		done bool
	}{
		{"older epoch: write the fence", protocol.ProgressRecord{Epoch: 2}, 0, false},
		{"the claim's epoch already: a later claim fenced it", protocol.ProgressRecord{Epoch: 3}, fenceSuperseded, true},
		{"a newer epoch", protocol.ProgressRecord{Epoch: 4}, fenceSuperseded, true},
		{"completed by the previous tenancy", protocol.ProgressRecord{Epoch: 2, Completed: true}, fenceCompleted, true},
		{"superseded beats completed", protocol.ProgressRecord{Epoch: 5, Completed: true}, fenceSuperseded, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, done := judgeProgressFence(tt.got, 3)
			if res != tt.res || done != tt.done {
				t.Fatalf("judgeProgressFence = (%v, %v), want (%v, %v)", res, done, tt.res, tt.done)
			}
		})
	}
}

func TestJudgeClaimWrite(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		ok      bool
		err     error
		outcome worker.CASOutcome
		label   string
	}{
		{"landed", true, nil, worker.CASLanded, "ok"},
		{"lost compare: fenced", false, nil, worker.CASFenced, "conflict"},
		{"store error: unconfirmed", false, boom, worker.CASUnconfirmed, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeClaimWrite(tt.ok, tt.err); got != tt.outcome {
				t.Fatalf("judgeClaimWrite = %v, want %v", got, tt.outcome)
			}
			if got := worker.WriteLabel(tt.ok, tt.err); got != tt.label {
				t.Fatalf("writeLabel = %q, want %q", got, tt.label)
			}
		})
	}
}
