package commitwriter

import (
	"context"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// txMem is a memstore whose UpdateTx behaves as pgstore's: a comparison
// already lost runs no statement; statements whose comparison lost are
// rolled back. landed counts the statements that committed.
type txMem struct {
	*memstore.Store
	ran, landed int
}

func (m *txMem) UpdateTx(ctx context.Context, ks store.Keyspace, key string, value []byte, expected store.Revision, fn store.TxFunc) (store.Revision, bool, error) {
	if e, ok, err := m.Get(ctx, ks, key); err != nil || !ok || e.Revision != expected {
		return 0, false, err
	}
	m.ran++
	if err := fn(ctx, nil); err != nil {
		return 0, false, err
	}
	r, ok, err := m.Update(ctx, ks, key, value, expected)
	if ok {
		m.landed++
	}
	return r, ok, err
}

// An exactly-once commit whose earlier attempt landed unseen is decided
// landed without running its statements again: when the record holds the
// intended write, and when a later write of the tenancy (a cut commit)
// built on it, so that the record differs from the intended write but
// holds its watermark. A commit past the record runs them once; a fenced
// one runs none.
func TestPayloadCommitRunsStatementsOnce(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	fence := protocol.FreshProgress("a", fp, "me", 2, 0)
	batch := coordination.SplitProgress{Watermark: 5, State: []byte("k5")}
	landed := fence.Commit(batch, 0)
	c := protocol.Cut{ID: protocol.ResidualID("a", 2, 1), Epoch: 2, Counter: 1, Weight: 1, Descriptor: []byte("rest")}
	cutOnIt := landed.CommitCut(batch, []byte("primary"), c, 0)
	tests := []struct {
		name       string
		moved      protocol.ProgressRecord // what landed after the writer's view
		want       worker.CASOutcome
		wantLanded int // statements committed by this commit
	}{
		{"the batch landed unseen", landed, worker.CASLanded, 0},
		{"the batch landed unseen and a cut commit built on it", cutOnIt, worker.CASLanded, 0},
		{"an older write of the tenancy landed unseen", fence.Commit(coordination.SplitProgress{Watermark: 4, State: []byte("k4")}, 0), worker.CASLanded, 1},
		{"a later tenancy fenced it", fence.Fence("peer", 3, 0), worker.CASFenced, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &txMem{Store: memstore.New(30 * time.Second)}
			v := workertest.NewEnv(t, st)
			key := protocol.ProgressKey("a")
			rev := workertest.Put(t, st, key, protocol.EncodeProgress(fence), 0)
			workertest.Put(t, st, key, protocol.EncodeProgress(tt.moved), rev)
			cell := &progressCell{fp: workertest.FP, epoch: 2, prog: fence, rev: rev, payloads: true}
			stmts := func(context.Context, any) error { return nil }
			d := worker.CASAdopt(context.Background(), v, payloadWrite(context.Background(), v, "a", cell, batch, stmts), cell.prog, cell.rev)
			if d.Outcome != tt.want || st.landed != tt.wantLanded {
				t.Fatalf("outcome %v (err %v), statements committed %d times (run %d); want %v, committed %d times", d.Outcome, d.Err, st.landed, st.ran, tt.want, tt.wantLanded)
			}
		})
	}
}
