package storetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// checkTimeout is the overall deadline of a check that waits for no TTL:
// every operation and every wait of the check ends by it. A hung store
// fails long before, at its first operation's opTimeout; the deadline
// catches one that answers every operation but far too slowly to finish,
// and leaves a loaded machine room: a property check on a 3-node NATS
// cluster under -race takes 8s on two idle cores and took over 30s beside
// other test binaries. A check that waits for leases adds its own
// real-time span (see check.span).
const checkTimeout = 90 * time.Second

// watchdogGrace is how long after its deadline a check may still run before
// the suite gives up on it: only a store that ignores contexts, or a call
// that blocks forever, gets that far.
const watchdogGrace = 10 * time.Second

// suite is the state one Run shares across its checks: the first check that
// timed out. Once a check has timed out, the store is hung, and the later
// checks are skipped instead of each waiting out its own deadline.
type suite struct {
	mu   sync.Mutex
	hung string // "check X timed out waiting for Y", or ""
}

// markHung records that check timed out waiting for what, unless an earlier
// check already did.
func (s *suite) markHung(check, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hung == "" {
		s.hung = fmt.Sprintf("check %s timed out waiting for %s", check, what)
	}
}

// hungCheck returns what markHung recorded, or "".
func (s *suite) hungCheck() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hung
}

// budget is one check's deadline. It starts when the check gets its first
// store, since its span may depend on the store's LeaseTTL.
type budget struct {
	check string
	suite *suite // nil outside Run
	span  func(ttl time.Duration) time.Duration

	mu       sync.Mutex
	deadline time.Time
	watchdog *time.Timer
	hung     bool // a wait of the check timed out: later waits end at once
}

// start sets the deadline from ttl, once, and arms the watchdog.
func (b *budget) start(ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.deadline.IsZero() {
		return
	}
	limit := checkTimeout + b.span(ttl)
	b.deadline = time.Now().Add(limit)
	b.watchdog = time.AfterFunc(limit+watchdogGrace, func() {
		// A test cannot be failed from another goroutine; a store call
		// that ignores its context leaves no other way out.
		panic(fmt.Sprintf("storetest: check %s still running %v after its deadline of %v: a store call ignores its context or blocks forever", b.check, watchdogGrace, limit))
	})
}

// stop disarms the watchdog; the check has returned.
func (b *budget) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watchdog != nil {
		b.watchdog.Stop()
	}
}

// end returns the deadline, or one opTimeout from now before start, or now
// once a wait of the check timed out.
func (b *budget) end() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hung {
		return time.Now()
	}
	if b.deadline.IsZero() {
		return time.Now().Add(opTimeout)
	}
	return b.deadline
}

// timedOut records that the check timed out waiting for what; the check's
// later waits end at once, so that its other steps do not each wait out
// eventTimeout on a hung store.
func (b *budget) timedOut(what string) {
	b.mu.Lock()
	b.hung = true
	b.mu.Unlock()
	if b.suite != nil {
		b.suite.markHung(b.check, what)
	}
}

// checked is the store a check works on: the backend's store with the
// check's budget attached, so that every helper bounds its operations and
// waits by the check's deadline. Capability lookups go through [unwrap].
type checked struct {
	store.Store
	b *budget
}

// budgeted is implemented by the stores the suite hands to checks (checked,
// and wrappers of it such as prefixed).
type budgeted interface {
	checkBudget() *budget
}

func (c *checked) checkBudget() *budget { return c.b }

// unwrap returns the backend's own store behind the suite's wrappers.
func (c *checked) unwrap() store.Store { return c.Store }

// budgetOf returns the budget of st, or a fresh one (opTimeout per wait)
// for a store that did not come from Run.
func budgetOf(st store.Store) *budget {
	if b, ok := st.(budgeted); ok {
		return b.checkBudget()
	}
	return &budget{check: "(outside Run)", span: func(time.Duration) time.Duration { return 0 }}
}

// unwrap returns the backend's store behind the suite's wrappers, for
// capability lookups (store.ValueLimiter, ExpiryPrecision).
func unwrap(st store.Store) store.Store {
	for {
		u, ok := st.(interface{ unwrap() store.Store })
		if !ok {
			return st
		}
		st = u.unwrap()
	}
}

// opCtx returns the context of one operation of a check on st: bounded by
// opTimeout and by the check's deadline.
func opCtx(st store.Store) (context.Context, context.CancelFunc) {
	end := budgetOf(st).end()
	if limit := time.Now().Add(opTimeout); limit.Before(end) {
		end = limit
	}
	return context.WithDeadline(context.Background(), end)
}

// failOp fails t for a failed operation; if the operation's own context
// ended, the store is counted as hung (see suite).
func failOp(t tester, st store.Store, ctx context.Context, what string, err error) {
	t.Helper()
	if ctx.Err() != nil {
		budgetOf(st).timedOut(what)
		t.Fatalf("%s: no answer in time: %v", what, err)
	}
	t.Fatalf("%s: %v", what, err)
}
