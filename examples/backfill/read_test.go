package main

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// shared is a store several workers of a test share: closing one worker's
// handle leaves it open for the others.
type shared struct{ store.Store }

func (shared) Close() error { return nil }

// TestCutsAndMovesReplayNothing runs the read function on the kit with no
// crash: two workers start a -misestimate job (one split holds a quarter
// of the records, so lanes run dry and the leader cuts it at runtime) and
// a third joins midway (so splits move to it by cooperative drains). Every
// record must be delivered exactly once: a cut or a move replays nothing,
// which holds only if the read function claims a batch before it
// processes it.
func TestCutsAndMovesReplayNothing(t *testing.T) {
	t.Parallel()
	o := &options{lanes: 8, splits: 12, records: 200_000, misestimate: true, pace: 2000, runtimeSplit: true}
	ds := datasetOf(o)
	coord := memstore.New(leaseDuration)
	defer coord.Close()
	sink, err := openLedger(t.Context(), memstore.New(leaseDuration))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.close()
	f := newFleet(func(line string) { t.Log(line) })
	logger := slog.New(slog.DiscardHandler)
	var wg sync.WaitGroup
	var workers []*worker
	for i := range 3 {
		w, err := newWorker(t.Context(), fmt.Sprintf("w%d", i+1), "run", o, func() (store.Store, error) { return shared{coord}, nil }, sink, f, logger, ds.planner())
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		if i == 2 {
			eventually(t, "half the records delivered", func() bool { return tallyOf(ds, sink.snapshot()).delivered >= o.records/2 })
		}
		wg.Go(func() {
			if err := w.runWorker(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := tallyOf(ds, sink.snapshot())
	takeovers, moves := f.counts()
	t.Logf("delivered %d, duplicates %d, runtime splits %d, moves %d, takeovers %d", got.delivered, got.duplicates(), len(got.residuals), moves, takeovers)
	for _, w := range workers {
		if s := w.state.Load(); s != stateCompleted {
			t.Errorf("worker %s %s, want completed", w.name, stateNames[s])
		}
	}
	if got.lost() != 0 || got.duplicates() != 0 || takeovers != 0 {
		t.Fatalf("lost %d, duplicates %d, takeovers %d; want none of each with no crash", got.lost(), got.duplicates(), takeovers)
	}
	if len(got.residuals) == 0 || moves == 0 {
		t.Fatalf("%d runtime splits and %d moves; the test needs both to mean anything", len(got.residuals), moves)
	}
}
