package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/spate-go/coordination/store"
)

// testConcurrentWriters races writers on one key: of N Creates of an absent
// key exactly one wins, and of N Updates at the same expected revision exactly
// one wins, round after round.
func testConcurrentWriters(t *testing.T, newStore newStoreFunc) {
	const writers, rounds = 8, 20
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		type result struct {
			rev store.Revision
			ok  bool
			err error
		}
		// race runs write concurrently for every writer. Writers run on
		// their own goroutines, so they report errors instead of failing.
		race := func(write func(ctx context.Context, i int) (store.Revision, bool, error)) (winner int, rev store.Revision) {
			t.Helper()
			var wg sync.WaitGroup
			start := make(chan struct{})
			results := make([]result, writers)
			for i := range writers {
				wg.Go(func() {
					ctx, cancel := opCtx(st)
					defer cancel()
					<-start
					rev, ok, err := write(ctx, i)
					results[i] = result{rev, ok, err}
				})
			}
			close(start)
			wg.Wait()
			winner = -1
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("%s: writer %d: %v", ks, i, r.err)
				}
				checkOutcome(t, "racing write", ks, "contended", r.rev, r.ok)
				if !r.ok {
					continue
				}
				if winner >= 0 {
					t.Fatalf("%s: writers %d and %d both won (revisions %d and %d)", ks, winner, i, results[winner].rev, r.rev)
				}
				winner = i
			}
			if winner < 0 {
				t.Fatalf("%s: no writer won", ks)
			}
			return winner, results[winner].rev
		}
		value := func(round, i int) []byte { return fmt.Appendf(nil, "r%d-w%d", round, i) }

		w, rev := race(func(ctx context.Context, i int) (store.Revision, bool, error) {
			return st.Create(ctx, ks, "contended", value(0, i))
		})
		e, _ := get(t, st, ks, "contended")
		wantEntry(t, ks.String()+" after racing Creates", e, value(0, w), rev)
		for round := 1; round <= rounds; round++ {
			expected := rev
			w, rev = race(func(ctx context.Context, i int) (store.Revision, bool, error) {
				return st.Update(ctx, ks, "contended", value(round, i), expected)
			})
			if rev <= expected {
				t.Fatalf("%s: round %d won at revision %d, not above %d", ks, round, rev, expected)
			}
			e, _ := get(t, st, ks, "contended")
			wantEntry(t, fmt.Sprintf("%s after round %d", ks, round), e, value(round, w), rev)
		}
	}
}
