package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/commitwriter"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/store"
)

// The actors' coordinator runs exactly-once commits on a store that runs
// transactions (docs/protocol.md, "Exactly-once commits").
var _ coordination.TxCommitter = (*Coordinator)(nil)

// CommitTx durably commits progress of the tenancy of epoch of a held split
// with fn run in the same store transaction (coordination.TxCommitter): the
// commit writer (commitwriter/commitpayload.go) runs it as the tenancy's
// fenced CAS. A tenancy other than the one Poll last handed out for the
// split, or a split not held, is Fenced. A store that runs no transactions
// is a Fatal usage error that writes nothing. It blocks for at most
// OpTimeout, and returns shortly after the stop channel closes.
func (c *Coordinator) CommitTx(split coordination.SplitID, epoch coordination.LeaseEpoch, progress coordination.SplitProgress, fn coordination.TxFunc) error {
	if err := c.gate(); err != nil {
		return err
	}
	if _, ok := c.v.Raw.(store.TxUpdater); !ok {
		return coordination.Errorf(coordination.Fatal, "CommitTx of split %s: exactly-once commits need a store that runs transactions (pgstore); this store (%T) does not", split, c.v.Raw)
	}
	if fn == nil {
		return coordination.Errorf(coordination.Fatal, "CommitTx of split %s: fn is nil; use Commit for a commit without statements", split)
	}
	if uint64(epoch) != c.out.PolledEpoch(split) {
		return worker.NotHeld(split)
	}
	ctx, stopped := c.stopContext()
	ctx, cancel := c.v.OpCtx(ctx)
	defer cancel()
	progress.State = cloneBytes(progress.State)
	res := c.commits.Ask(commitwriter.CommitRequest{Ctx: ctx, Split: split, Epoch: uint64(epoch), Progress: progress, Payload: fn})
	if !res.Landed && stopped() {
		return worker.StoppedBeforeDone("exactly-once commit")
	}
	return res.Err
}
