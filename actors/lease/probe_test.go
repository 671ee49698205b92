package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// pausingStore holds the first Create it sees until release is closed,
// after telling paused.
type pausingStore struct {
	store.Store
	once    sync.Once
	paused  chan struct{}
	release chan struct{}
}

func (s *pausingStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	r, ok, err := s.Store.Create(ctx, ks, key, v)
	s.once.Do(func() {
		close(s.paused)
		<-s.release
	})
	return r, ok, err
}

// TestTwoProcessesWithOneIDProbeTogether: two processes started together
// with one InstanceID each probe a key of their own (docs/protocol.md,
// "Joining"), so neither breaks the other's probe and fails blaming the
// store; the twin is then refused when it announces.
func TestTwoProcessesWithOneIDProbeTogether(t *testing.T) {
	mem := memstore.New(30 * time.Second)
	first := &pausingStore{Store: mem, paused: make(chan struct{}), release: make(chan struct{})}
	a := workertest.NewEnv(t, first)
	b := workertest.NewEnv(t, mem)
	b.Nonce = "n2"
	errA := make(chan error, 1)
	go func() { errA <- probe(context.Background(), a) }()
	<-first.paused // a created its probe key and has not checked it yet
	if err := probe(context.Background(), b); err != nil {
		t.Fatalf("the second process's probe: %v", err)
	}
	close(first.release)
	if err := <-errA; err != nil {
		t.Fatalf("the first process's probe: %v", err)
	}
}
