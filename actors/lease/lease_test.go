package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// outageStore is a memstore that fails every operation at once with
// Retryable while down is set (a store that refuses: disconnected, no
// leader).
type outageStore struct {
	*memstore.Store
	down    atomic.Bool
	refused atomic.Int32 // updates refused while down
}

var errStoreDown = coordination.Errorf(coordination.Retryable, "injected: store down")

func (s *outageStore) Create(ctx context.Context, ks store.Keyspace, key string, v []byte) (store.Revision, bool, error) {
	if s.down.Load() {
		return 0, false, errStoreDown
	}
	return s.Store.Create(ctx, ks, key, v)
}

func (s *outageStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if s.down.Load() {
		s.refused.Add(1)
		return 0, false, errStoreDown
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

func (s *outageStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if s.down.Load() {
		return store.Entry{}, false, errStoreDown
	}
	return s.Store.Get(ctx, ks, key)
}

// leaseRig runs a lone lease actor of worker w1 with session nonce over an
// outageStore in a synctest bubble, joined at the rig's start: its presence
// key is written and the first heartbeat is armed.
type leaseRig struct {
	mem   *memstore.Store
	clk   *clock.Mock
	st    *outageStore
	v     *worker.Env
	rev   uint64       // the presence revision written at the start
	ended *atomic.Bool // the lease told the leader the session ended
}

func newLeaseRig(t *testing.T, nonce string) *leaseRig {
	e, clk := workertest.NewEngine(t)
	mem := memstore.New(1500*time.Millisecond, memstore.WithClock(clk))
	st := &outageStore{Store: mem}
	v, rev, ended := spawnLoneLease(t, e, st, workertest.Config(t, clk, "w1"), nonce)
	synctest.Wait()
	return &leaseRig{mem: mem, clk: clk, st: st, v: v, rev: rev, ended: ended}
}

// spawnLoneLease runs a lone lease actor of worker w1 (cfg's clock) with
// session nonce over st on e, joined now: its presence key is written and
// the first heartbeat is armed. It is stopped at the test's cleanup. The
// flag it returns is set once the lease tells the leader (a stand-in) that
// the session ended.
func spawnLoneLease(t *testing.T, e *actor.Engine, st store.Store, cfg coordination.Config, nonce string) (*worker.Env, uint64, *atomic.Bool) {
	t.Helper()
	v := workertest.ActorEnv(e, st, cfg, nonce, prometheus.NewPedanticRegistry())
	ended := new(atomic.Bool)
	v.PIDs.Leader = e.SpawnFunc(func(c *actor.Context) {
		if m, ok := c.Message().(wire.SessionChanged); ok && !m.Live {
			ended.Store(true)
		}
	}, "leader")
	rev, ok, err := st.Create(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"), presenceValue(v, nonce, nil))
	if err != nil || !ok {
		t.Fatalf("create the presence key: %v %v", ok, err)
	}
	pid := e.Spawn(New(v), "lease")
	v.PIDs.Lease = pid
	t.Cleanup(func() {
		v.Cancel()
		<-e.Poison(pid).Done()
		v.WG.Wait()
	})
	e.Send(pid, startupDone{rev: uint64(rev)})
	return v, uint64(rev), ended
}

// presence reads w1's presence key from the store underneath.
func (lr *leaseRig) presence(t *testing.T) (protocol.PresenceRecord, uint64) {
	t.Helper()
	e, ok, err := lr.mem.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"))
	if err != nil || !ok {
		t.Fatalf("presence key: found %v, err %v", ok, err)
	}
	p, err := protocol.DecodePresence(protocol.WorkerKey("w1"), e.Value)
	if err != nil {
		t.Fatal(err)
	}
	return p, uint64(e.Revision)
}

// beatsSpanningALease returns a session nonce whose heartbeats 2 to 4 are
// at least a LeaseDuration after heartbeat 1 (the schedule of the outage
// report in issue #12), and the offsets of heartbeats 1 and 3 from the
// start.
func beatsSpanningALease(t *testing.T, lease time.Duration) (nonce string, b1, b3 time.Duration) {
	t.Helper()
	for i := range 1000 {
		nonce = fmt.Sprintf("nonce-%d", i)
		h := func(r uint64) time.Duration { return heartbeatInterval(lease, "w1", nonce, r) }
		if h(2)+h(3)+h(4) >= lease+20*time.Millisecond {
			return nonce, h(1), h(1) + h(2) + h(3)
		}
	}
	t.Fatal("no nonce among 1000 spaces heartbeats 2-4 over a LeaseDuration")
	return "", 0, 0
}

// An outage that swallows the renewals of two heartbeats in a row, and ends
// well before the lease runs out, keeps the session: the failed renewal is
// retried soon (docs/protocol.md, "Sessions"), not only at the next
// heartbeat, which here comes a full LeaseDuration after the last landed
// renewal.
func TestAnOutageOverTwoHeartbeatsKeepsTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lease := workertest.Config(t, nil, "w1").LeaseDuration
		nonce, b1, b3 := beatsSpanningALease(t, lease)
		lr := newLeaseRig(t, nonce)
		start := lr.clk.Now()
		const step = 5 * time.Millisecond
		var atOutage uint64
		for lr.clk.Since(start) < b1+2*lease {
			lr.clk.Add(step)
			synctest.Wait()
			since := lr.clk.Since(start)
			switch {
			case since >= b1+step && since < b3+step && !lr.st.down.Load():
				if _, atOutage = lr.presence(t); atOutage <= lr.rev {
					t.Fatalf("heartbeat 1 did not renew the presence (revision %d)", atOutage)
				}
				lr.st.down.Store(true)
			case since >= b3+step:
				lr.st.down.Store(false)
			}
			if lr.ended.Load() {
				t.Fatalf("the session ended %s after the start (outage from %s to %s, lease %s)", since, b1+step, b3+step, lease)
			}
		}
		if p, rev := lr.presence(t); p.Nonce != nonce || rev <= atOutage {
			t.Fatalf("presence %+v at revision %d; want session %q renewed past %d", p, rev, nonce, atOutage)
		}
		// Not hammered: one try per retry delay, plus the two heartbeats.
		if n, most := int(lr.st.refused.Load()), int((b3-b1)/worker.RenewRetryDelay(lease))+3; n > most {
			t.Fatalf("%d renewals tried during an outage of %s, want at most %d", n, b3-b1, most)
		}
	})
}

// blackHoleStore is a memstore that stops answering for d from the armed
// presence renewal on: every operation sent in that window waits out its
// context and fails, as against a server that silently drops requests (a
// store that hangs, not one that refuses).
type blackHoleStore struct {
	*memstore.Store
	arm, d  time.Duration // the outage starts at the first presence renewal at least arm after the start
	start   time.Time
	mu      sync.Mutex
	from    time.Time // the outage's start; zero until it began
	blocked atomic.Int32
}

func (s *blackHoleStore) gate(ctx context.Context, presenceUpdate bool) error {
	now := time.Now()
	s.mu.Lock()
	if presenceUpdate && s.from.IsZero() && now.Sub(s.start) >= s.arm {
		s.from = now
	}
	hung := !s.from.IsZero() && !now.Before(s.from) && now.Before(s.from.Add(s.d))
	s.mu.Unlock()
	if !hung {
		return nil
	}
	s.blocked.Add(1)
	<-ctx.Done()
	return coordination.Errorf(coordination.Retryable, "injected: no answer: %v", ctx.Err())
}

func (s *blackHoleStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if err := s.gate(ctx, ks == store.Ephemeral && key == protocol.WorkerKey("w1")); err != nil {
		return 0, false, err
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

func (s *blackHoleStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	if err := s.gate(ctx, false); err != nil {
		return store.Entry{}, false, err
	}
	return s.Store.Get(ctx, ks, key)
}

// With the default lease (30s) and OpTimeout (10s), a session survives a
// store that hangs for more than a third of its lease (12s here), starting
// at the worst moment: just as a renewal is sent a long heartbeat after
// the last landed one (docs/protocol.md, "Outage survival"). The write
// waits out OpTimeout; the read that confirms it is bounded by a quarter
// heartbeat, not by another OpTimeout (which, before, pushed the retry past
// the lease: 12 + 10 + 10 + 2.5 > 30s). Real time throughout: the clock is
// the bubble's.
func TestTheDefaultsSurviveAHungStoreForAThirdOfTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		def := coordination.DefaultConfig()
		lease, outage := def.LeaseDuration, def.LeaseDuration/3+2*time.Second
		// A nonce whose second heartbeat comes late (at least 0.38 lease
		// after the first): the renewal sent then starts the outage.
		var nonce string
		for i := range 1000 {
			if n := fmt.Sprintf("nonce-%d", i); heartbeatInterval(lease, "w1", n, 2) >= lease*38/100 {
				nonce = n
				break
			}
		}
		if nonce == "" {
			t.Fatal("no nonce with a late second heartbeat among 1000")
		}
		st := &blackHoleStore{Store: memstore.New(lease), arm: heartbeatInterval(lease, "w1", nonce, 1) + time.Second, d: outage, start: time.Now()}
		t.Cleanup(func() { _ = st.Close() })
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg := workertest.Config(t, clock.New(), "w1")
		cfg.LeaseDuration, cfg.OpTimeout = def.LeaseDuration, def.OpTimeout
		_, rev, ended := spawnLoneLease(t, e, st, cfg, nonce)
		for end := time.Now().Add(3 * lease); time.Now().Before(end); {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if ended.Load() {
				st.mu.Lock()
				from := st.from
				st.mu.Unlock()
				t.Fatalf("the session ended %s after the outage of %s began", time.Since(from), outage)
			}
		}
		if st.blocked.Load() == 0 {
			t.Fatal("the outage never blocked an operation")
		}
		if got, _, _ := st.Store.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); uint64(got.Revision) <= rev+1 {
			t.Fatalf("presence at revision %d, want renewals after the outage", got.Revision)
		}
	})
}
