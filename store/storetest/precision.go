package storetest

import (
	"time"

	"github.com/spate-go/coordination/store"
)

// ExpiryPrecision is implemented by a store whose ephemeral keys may expire
// somewhat before their LeaseTTL, for example because its clock or its
// expiry sweep is coarse. The suite then checks that a key written once is
// live until LeaseTTL less ExpiryPrecision after its write, instead of until
// the LeaseTTL itself. A store that does not implement it promises that a
// key is never absent before its LeaseTTL has passed.
type ExpiryPrecision interface {
	// ExpiryPrecision is how much earlier than LeaseTTL after its last
	// write an ephemeral key may expire; it must be below LeaseTTL.
	ExpiryPrecision() time.Duration
}

// earlyExpiry returns the ExpiryPrecision st declares, or 0.
func earlyExpiry(t tester, st store.Store) time.Duration {
	t.Helper()
	p, ok := unwrap(st).(ExpiryPrecision)
	if !ok {
		return 0
	}
	d := p.ExpiryPrecision()
	if d < 0 || d >= st.LeaseTTL() {
		t.Fatalf("ExpiryPrecision() = %v with LeaseTTL %v; declare a precision from 0 up to below the TTL", d, st.LeaseTTL())
	}
	return d
}
