package memstore_test

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/store/storetest"
)

// conformanceTTL is shorter than the 2s storetest asks for, to keep the real
// time the TTL checks wait short; storetest times its checks from LeaseTTL.
const conformanceTTL = 500 * time.Millisecond

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, _ time.Duration) store.Store {
		return memstore.New(conformanceTTL)
	})
}

func TestConformanceWithValueCap(t *testing.T) {
	storetest.Run(t, func(t *testing.T, _ time.Duration) store.Store {
		return memstore.New(conformanceTTL, memstore.WithMaxValueSize(1024))
	})
}
