package memstore

import "github.com/benbjohnson/clock"

// Option configures a [Store] at construction.
type Option func(*Store)

// WithClock makes the store judge ephemeral expiry on c and arm its expiry
// timers on c. Share the clock with the coordinators that use the store (for
// example one *clock.Mock in a test). A nil c keeps the real clock, which is
// also the default.
func WithClock(c clock.Clock) Option {
	return func(s *Store) {
		if c != nil {
			s.clock = c
		}
	}
}

// WithMaxValueSize caps values at n bytes: a Create or Update with a larger
// value returns Fatal "value for <key> is N bytes, above this store's cap of M
// bytes" and writes nothing, and [Store.MaxValueSize] reports n. The default,
// and any n <= 0, means no cap.
func WithMaxValueSize(n int) Option {
	return func(s *Store) {
		s.maxValue = max(n, 0)
	}
}
