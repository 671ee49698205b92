package commitwriter

import (
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

func wm(n int64) *int64 { return &n }

func TestClassifyProgressConflict(t *testing.T) {
	base := protocol.ProgressRecord{ID: "s", Epoch: 2, Owner: "me", Watermark: wm(5), State: []byte{}}
	intended := base
	intended.Watermark = wm(9)
	other := base
	other.Owner = "peer"
	higher := base
	higher.Epoch, higher.Owner = 3, "peer"
	done := base
	done.Completed = true
	tests := []struct {
		name  string
		found bool
		got   protocol.ProgressRecord
		want  worker.ConflictClass
	}{
		{"absent is a fence", false, protocol.ProgressRecord{}, worker.ConflictFenced},
		{"the intended write landed", true, intended, worker.ConflictLanded},
		{"this tenancy's completion landed", true, done, worker.ConflictLanded},
		{"own earlier write: adopt", true, base, worker.ConflictAdopt},
		{"another owner", true, other, worker.ConflictFenced},
		{"a later fence", true, higher, worker.ConflictFenced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyProgressConflict("me", 2, intended, tt.found, tt.got); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckWatermark(t *testing.T) {
	rec := protocol.ProgressRecord{Watermark: wm(57)}
	if err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 57}); err != nil {
		t.Fatalf("equal watermark: %v", err)
	}
	err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 40})
	want := "coordination error (fatal): split s-7: commit watermark 40 is below the committed watermark 57; a source must never move a watermark backwards"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if err := checkWatermark("s", protocol.ProgressRecord{}, coordination.SplitProgress{Watermark: -3}); err != nil {
		t.Fatalf("null watermark: %v", err)
	}
}
