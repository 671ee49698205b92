package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination/store"
)

// testListChurn lists hundreds of stable keys while keys that sort before
// them are created and deleted: every listing must hold every stable key at
// its revision, once. A List that pages through the keys and lets writes in
// between its pages skips or repeats keys when earlier ones come and go.
func testListChurn(t *testing.T, newStore newStoreFunc) {
	const stable, churn, minLists, minChurn = 300, 50, 10, 200
	st, _ := fresh(t, newStore)
	want := map[string]store.Entry{}
	for i := range stable {
		k := fmt.Sprintf("lc.s.%03d", i)
		want[k] = store.Entry{Key: k, Value: []byte(k), Revision: mustCreate(t, st, store.Durable, k, []byte(k))}
	}
	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		churned atomic.Int64
		errs    = make(chan error, 1)
	)
	wg.Go(func() {
		live := make([]bool, churn)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			j := i % churn
			key := fmt.Sprintf("lc.a.%03d", j)
			ctx, cancel := opCtx(st)
			var err error
			if live[j] {
				_, err = st.Delete(ctx, store.Durable, key, 0)
			} else {
				_, _, err = st.Create(ctx, store.Durable, key, nil)
			}
			cancel()
			if err != nil {
				errs <- fmt.Errorf("churn write of %q: %v", key, err)
				return
			}
			live[j] = !live[j]
			churned.Add(1)
		}
	})
	defer func() { close(stop); wg.Wait() }()
	// No deadline: on a loaded machine the listings and the churn just take
	// longer, and every listing and write is bounded by its own timeout.
	for lists := 0; lists < minLists || churned.Load() < minChurn; lists++ {
		got := list(t, st, store.Durable, "lc.")
		for k := range got {
			if _, ok := want[k]; !ok {
				delete(got, k) // a churn key, which may or may not be listed
			}
		}
		sameEntries(t, fmt.Sprintf("listing %d of %d stable keys while %d keys before them churn", lists+1, stable, churn), got, want)
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
}
