package commitwriter

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// checkWatermark enforces "progress never regresses" before any write: a
// commit below the committed watermark is Fatal.
func checkWatermark(id coordination.SplitID, rec protocol.ProgressRecord, p coordination.SplitProgress) error {
	if rec.Watermark != nil && p.Watermark < *rec.Watermark {
		return coordination.Errorf(coordination.Fatal, "split %s: commit watermark %d is below the committed watermark %d; a source must never move a watermark backwards", id, p.Watermark, *rec.Watermark)
	}
	return nil
}

// classifyProgressConflict judges the progress record got (found=false:
// absent) against a commit intended by tenancy epoch of me.
func classifyProgressConflict(me string, epoch uint64, intended protocol.ProgressRecord, found bool, got protocol.ProgressRecord) worker.ConflictClass {
	switch {
	case !found || got.Epoch != epoch || got.Owner != me:
		return worker.ConflictFenced
	case intended.SameProgress(got) || got.Completed:
		return worker.ConflictLanded // this tenancy's write, or its completion, landed unseen
	}
	return worker.ConflictAdopt
}
