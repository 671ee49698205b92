package worker_test

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

// createFault makes the first create of each key in keys fail Retryable:
// after it landed (its reply lost) when landed, else before writing.
type createFault struct {
	store.Store
	keys   map[string]bool
	landed bool
}

func (s *createFault) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	if !s.keys[key] {
		return s.Store.Create(ctx, ks, key, v)
	}
	delete(s.keys, key)
	if !s.landed {
		return 0, false, coordination.Errorf(coordination.Retryable, "injected: create failed")
	}
	if _, ok, err := s.Store.Create(ctx, ks, key, v); err != nil || !ok {
		return 0, ok, err
	}
	return 0, false, coordination.Errorf(coordination.Retryable, "injected: reply lost after the write landed")
}

// TestCreateResidualDecidesALostReplyByReadingBack: a residual create whose
// reply was lost is decided by reading the key back (docs/protocol.md,
// "Runtime split", "The steps"), so a claim's roll-forward confirms it
// instead of failing the split with an attempt charged; a create that
// wrote nothing still errs, and the residual's records exist only when it
// confirms.
func TestCreateResidualDecidesALostReplyByReadingBack(t *testing.T) {
	cut := protocol.Cut{ID: "_p_1_1", Epoch: 1, Counter: 1, Weight: 2, Descriptor: []byte("d")}
	for _, tt := range []struct {
		name   string
		keys   []string
		landed bool
		want   bool // confirmed
	}{
		{"the spec's create landed, its reply lost", []string{protocol.SpecKey(cut.ID)}, true, true},
		{"the split record's create landed, its reply lost", []string{protocol.SplitKey(cut.ID)}, true, true},
		{"both", []string{protocol.SpecKey(cut.ID), protocol.SplitKey(cut.ID)}, true, true},
		{"the spec's create wrote nothing", []string{protocol.SpecKey(cut.ID)}, false, false},
		{"the split record's create wrote nothing", []string{protocol.SplitKey(cut.ID)}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem := memstore.New(time.Second)
			st := &createFault{Store: mem, keys: map[string]bool{}, landed: tt.landed}
			for _, k := range tt.keys {
				st.keys[k] = true
			}
			v := workertest.NewEnv(t, st)
			err := worker.CreateResidual(t.Context(), v, workertest.FP, "p", cut, 1)
			if got := err == nil; got != tt.want {
				t.Fatalf("CreateResidual = %v, want confirmed %v", err, tt.want)
			}
			if err != nil && coordination.KindOf(err) != coordination.Retryable {
				t.Errorf("error %v is not Retryable", err)
			}
			_, specFound, _ := mem.Get(t.Context(), store.Durable, protocol.SpecKey(cut.ID))
			_, splitFound, _ := mem.Get(t.Context(), store.Durable, protocol.SplitKey(cut.ID))
			if tt.want && (!specFound || !splitFound) {
				t.Errorf("confirmed with spec %v, split record %v in the store", specFound, splitFound)
			}
		})
	}
}
