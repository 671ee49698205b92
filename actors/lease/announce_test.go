package lease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestAnnounceRetryAfterALandedAttemptIsNoTwin: an announce whose write
// landed but reported an error is retried with the same nonce, and the
// retry takes its own value over; a third nonce there is a live twin.
func TestAnnounceRetryAfterALandedAttemptIsNoTwin(t *testing.T) {
	tests := []struct {
		name  string
		found string // the nonce on the presence key
		twin  bool
	}{
		{"the ended session's value", "ended", false},
		{"this announce's earlier attempt landed", "retry", false},
		{"another live worker", "other", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New(30 * time.Second)
			v := workertest.NewEnv(t, st)
			key := protocol.WorkerKey(v.ID)
			if _, _, err := st.Create(context.Background(), store.Ephemeral, key, protocol.EncodePresence(protocol.PresenceRecord{Nonce: tt.found})); err != nil {
				t.Fatal(err)
			}
			_, err := announceSession(context.Background(), v, "retry", "ended")
			if tt.twin {
				if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), "unique InstanceID") {
					t.Fatalf("err %v, want the twin Fatal", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			e, _, _ := st.Get(context.Background(), store.Ephemeral, key)
			if p, _ := protocol.DecodePresence(key, e.Value); p.Nonce != "retry" {
				t.Fatalf("presence nonce %q after the takeover", p.Nonce)
			}
		})
	}
}

// TestStartupWaitsForAStandingPredecessor: at startup a presence key that
// carries another session is challenged and taken over only once it stood
// still for the twin window after the challenge (a crashed predecessor),
// within one heartbeat (LeaseDuration/3) of the start; one renewed or
// rewritten meanwhile is a live twin's (Fatal, nothing written), one that
// expires meanwhile is created at once, and this announce's own value is
// taken over at once (docs/protocol.md, "Sessions"). The challenge key
// holds the announce's nonce while it waits and is gone once it returned.
func TestStartupWaitsForAStandingPredecessor(t *testing.T) {
	tests := []struct {
		name   string
		found  string                                         // the nonce on the key at startup
		during func(t *testing.T, st store.Store, rev uint64) // done three steps in, between two reads; nil: nothing
		after  int                                            // when the announce must have returned, in steps of LeaseDuration/24 (0: at once)
		twin   bool
	}{
		{name: "a standing predecessor is taken over after the window", found: "old", after: 6},
		{name: "an unreadable value standing still is taken over after the window", found: "\x00corrupt", after: 6},
		{name: "a renewed key is a live twin's", found: "old", twin: true, after: 4, during: func(t *testing.T, st store.Store, rev uint64) {
			putPresence(t, st, protocol.EncodePresence(protocol.PresenceRecord{Nonce: "old"}), rev)
		}},
		{name: "a key rewritten by a third session is a live twin's", found: "old", twin: true, after: 4, during: func(t *testing.T, st store.Store, rev uint64) {
			putPresence(t, st, protocol.EncodePresence(protocol.PresenceRecord{Nonce: "third"}), rev)
		}},
		{name: "a key that expires meanwhile is created", found: "old", after: 4, during: func(t *testing.T, st store.Store, rev uint64) {
			if _, err := st.Delete(context.Background(), store.Ephemeral, protocol.WorkerKey("me"), store.Revision(rev)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "this announce's own earlier attempt is taken over at once", found: "n", after: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := memstore.New(time.Hour)
				v := workertest.NewEnv(t, st)
				clk := v.Clock.(*clock.Mock)
				key := protocol.WorkerKey(v.ID)
				value := []byte(tt.found)
				if tt.found != "\x00corrupt" {
					value = protocol.EncodePresence(protocol.PresenceRecord{Nonce: tt.found})
				}
				rev := putPresence(t, st, value, 0)
				type result struct {
					rev uint64
					err error
				}
				done := make(chan result, 1)
				go func() {
					r, err := announceAtStartup(context.Background(), v, "n", new(atomic.Bool))
					done <- result{r, err}
				}()
				lease := v.Config.LeaseDuration
				step := lease / 24
				var got *result
				var at time.Duration
				for at = 0; at <= lease; at += step {
					synctest.Wait()
					select {
					case r := <-done:
						got = &r
					default:
					}
					if got != nil {
						break
					}
					if at == 3*step {
						if c, ok, _ := st.Get(context.Background(), store.Ephemeral, protocol.ChallengeKey("me")); !ok || string(c.Value) != "n" {
							t.Fatalf("while waiting, the challenge key holds %q (found %v), want the announce's nonce", c.Value, ok)
						}
						if tt.during != nil {
							tt.during(t, st, rev)
						}
					}
					clk.Add(step)
				}
				if got == nil {
					t.Fatal("the announce never returned")
				}
				if want := time.Duration(tt.after) * step; at != want {
					t.Fatalf("returned %+v after %v, want %v", got, at, want)
				}
				if at > lease/3 {
					t.Fatalf("returned after %v, more than one heartbeat (%v)", at, lease/3)
				}
				if _, ok, _ := st.Get(context.Background(), store.Ephemeral, protocol.ChallengeKey("me")); ok {
					t.Fatal("the challenge key outlived the announce")
				}
				e, found, _ := st.Get(context.Background(), store.Ephemeral, key)
				p, _ := protocol.DecodePresence(key, e.Value)
				if tt.twin {
					if coordination.KindOf(got.err) != coordination.Fatal || !strings.Contains(got.err.Error(), `InstanceID "me" is in use by another live worker`) {
						t.Fatalf("err %v, want the twin Fatal", got.err)
					}
					if !found || p.Nonce == "n" {
						t.Fatalf("the refused announce wrote the key: %q", p.Nonce)
					}
					return
				}
				if got.err != nil || !found || p.Nonce != "n" || uint64(e.Revision) != got.rev {
					t.Fatalf("announce = %d, %v; key holds %q at %d", got.rev, got.err, p.Nonce, e.Revision)
				}
			})
		})
	}
}

// putPresence writes value at worker "me"'s presence key (create when rev is
// 0, else update at rev) and returns the new revision.
func putPresence(t *testing.T, st store.Store, value []byte, rev uint64) uint64 {
	t.Helper()
	key := protocol.WorkerKey("me")
	var r store.Revision
	var ok bool
	var err error
	if rev == 0 {
		r, ok, err = st.Create(context.Background(), store.Ephemeral, key, value)
	} else {
		r, ok, err = st.Update(context.Background(), store.Ephemeral, key, value, store.Revision(rev))
	}
	if err != nil || !ok {
		t.Fatalf("put %s: %v %v", key, ok, err)
	}
	return uint64(r)
}

// TestAPutOfAnotherSessionOnTheOwnKeyIsATwin: the watch delivering this
// worker's presence key with another session's nonce at a revision above
// this session's last write is a live twin that took the key over: Fatal
// at once (docs/protocol.md, "Sessions", "Twins"); an older revision (a
// stale echo), an unreadable value and this session's own put are not.
func TestAPutOfAnotherSessionOnTheOwnKeyIsATwin(t *testing.T) {
	tests := []struct {
		name  string
		nonce string
		above uint64 // added to the session's presence revision
		twin  bool
	}{
		{"another session above this session's write", "twin", 1, true},
		{"another session at or below it is a stale echo", "old", 0, false},
		{"an unreadable value", "", 1, false},
		{"this session's own renewal", "n1", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaseRig(t, "n1")
				lr.v.Engine.Send(lr.v.PIDs.Lease, wire.PresenceChanged{Instance: "w1", Nonce: tt.nonce, Rev: lr.rev + tt.above})
				synctest.Wait()
				err := lr.v.Failure()
				if !tt.twin {
					if err != nil {
						t.Fatalf("failed with %v", err)
					}
					return
				}
				if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), `InstanceID "w1" is in use by another live worker`) {
					t.Fatalf("failure %v, want the twin Fatal", err)
				}
			})
		})
	}
}

// TestALiveSessionAnswersAChallengeAtOnce: a challenge of a process starting
// with this worker's InstanceID makes the lease renew its presence at once,
// without waiting for the heartbeat, so the challenger sees the key move
// and fails as a twin (docs/protocol.md, "Sessions", "Restart with the same
// id"); the challenge this worker's own startup wrote, and another
// instance's, are not answered.
func TestALiveSessionAnswersAChallengeAtOnce(t *testing.T) {
	tests := []struct {
		name       string
		instance   string
		challenger string
		answered   bool
	}{
		{"a process starting with this InstanceID", "w1", "newcomer", true},
		{"this worker's own startup", "w1", "n1", false},
		{"another instance", "w2", "newcomer", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lr := newLeaseRig(t, "n1")
				lr.v.Engine.Send(lr.v.PIDs.Lease, wire.PresenceChallenged{Instance: tt.instance, Challenger: tt.challenger, Rev: 1})
				synctest.Wait()
				p, rev := lr.presence(t)
				if moved := rev != lr.rev; moved != tt.answered || p.Nonce != "n1" {
					t.Fatalf("presence %q at %d after the challenge (written at %d); want answered %v", p.Nonce, rev, lr.rev, tt.answered)
				}
				if err := lr.v.Failure(); err != nil {
					t.Fatalf("failed with %v", err)
				}
			})
		})
	}
}

// heldStore is a memstore whose ephemeral updates wait while hold is armed,
// until the test releases them: a presence renewal in flight.
type heldStore struct {
	*memstore.Store
	hold    atomic.Bool
	release chan struct{} // closed by the test; never sent on
}

func (s *heldStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	if ks == store.Ephemeral && s.hold.Load() {
		<-s.release
	}
	return s.Store.Update(ctx, ks, key, v, rev)
}

// TestAChallengeDuringARenewalIsAnsweredAfterIt: a challenge that comes
// while a presence renewal is in flight is answered by one more renewal as
// soon as that one returns: the renewal in flight may have landed before
// the challenger read the key (docs/protocol.md, "Sessions", "Restart with
// the same id").
func TestAChallengeDuringARenewalIsAnsweredAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, clk := workertest.NewEngine(t)
		mem := memstore.New(time.Hour, memstore.WithClock(clk))
		st := &heldStore{Store: mem, release: make(chan struct{})}
		cfg := workertest.Config(t, clk, "w1")
		v, rev, _ := spawnLoneLease(t, e, st, cfg, "n1")
		synctest.Wait()
		st.hold.Store(true)
		clk.Add(heartbeatInterval(cfg.LeaseDuration, "w1", "n1", 1)) // the renewal is sent and held
		synctest.Wait()
		e.Send(v.PIDs.Lease, wire.PresenceChallenged{Instance: "w1", Challenger: "newcomer", Rev: 1})
		synctest.Wait()
		st.hold.Store(false)
		close(st.release)
		synctest.Wait()
		got, _, err := mem.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1"))
		if err != nil {
			t.Fatal(err)
		}
		if writes := uint64(got.Revision) - rev; writes != 2 {
			t.Fatalf("%d presence writes after the challenge came during a renewal, want 2 (the renewal, then the answer)", writes)
		}
	})
}
