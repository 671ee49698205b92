package store_test

import (
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// decorator forwards to another store and says so through Unwrap, without
// implementing store.ValueLimiter itself.
type decorator struct {
	store.Store
	inner store.Store
}

func (d decorator) Unwrap() store.Store { return d.inner }

func wrap(st store.Store) store.Store { return decorator{Store: st, inner: st} }

// capping is a decorator with a cap of its own.
type capping struct {
	decorator
	limit int
}

func (c capping) MaxValueSize() int { return c.limit }

// hidden embeds a store without Unwrap: its cap is invisible.
type hidden struct{ store.Store }

// loop unwraps to itself.
type loop struct{ store.Store }

func (l loop) Unwrap() store.Store { return l }

func TestMaxValueSize(t *testing.T) {
	capped := memstore.New(time.Second, memstore.WithMaxValueSize(100))
	uncapped := memstore.New(time.Second)
	t.Cleanup(func() { _, _ = capped.Close(), uncapped.Close() })
	tests := []struct {
		name   string
		st     store.Store
		want   int
		wantOK bool
	}{
		{"capped store", capped, 100, true},
		{"uncapped store", uncapped, 0, false},
		{"nil", nil, 0, false},
		{"one decorator", wrap(capped), 100, true},
		{"three decorators", wrap(wrap(wrap(capped))), 100, true},
		{"decorator over an uncapped store", wrap(uncapped), 0, false},
		{"decorator with its own cap is asked first", capping{decorator{capped, capped}, 40}, 40, true},
		{"decorator without Unwrap hides the cap", hidden{capped}, 0, false},
		{"decorator unwrapping to nil", decorator{Store: capped}, 0, false},
		{"decorator unwrapping to itself ends", loop{capped}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := store.MaxValueSize(tc.st)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("MaxValueSize = (%d, %v), want (%d, %v)", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
