package lease

import (
	"context"
	"github.com/benbjohnson/clock"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
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
// carries another session is taken over only once it stood still for the
// twin window (a crashed predecessor); one renewed or rewritten meanwhile
// is a live twin's (Fatal, nothing written), one that expires meanwhile is
// created at once, and this announce's own value is taken over at once
// (docs/protocol.md, "Sessions").
func TestStartupWaitsForAStandingPredecessor(t *testing.T) {
	tests := []struct {
		name   string
		found  string                                         // the nonce on the key at startup
		during func(t *testing.T, st store.Store, rev uint64) // done a third of the window in, between two reads; nil: nothing
		after  int                                            // when the announce must have returned, in twelfths of the window (0: at once)
		twin   bool
	}{
		{name: "a standing predecessor is taken over after the window", found: "old", after: 12},
		{name: "an unreadable value standing still is taken over after the window", found: "\x00corrupt", after: 12},
		{name: "a renewed key is a live twin's", found: "old", twin: true, after: 6, during: func(t *testing.T, st store.Store, rev uint64) {
			putPresence(t, st, protocol.EncodePresence(protocol.PresenceRecord{Nonce: "old"}), rev)
		}},
		{name: "a key rewritten by a third session is a live twin's", found: "old", twin: true, after: 6, during: func(t *testing.T, st store.Store, rev uint64) {
			putPresence(t, st, protocol.EncodePresence(protocol.PresenceRecord{Nonce: "third"}), rev)
		}},
		{name: "a key that expires meanwhile is created", found: "old", after: 6, during: func(t *testing.T, st store.Store, rev uint64) {
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
					r, err := announceAtStartup(context.Background(), v, "n")
					done <- result{r, err}
				}()
				window := twinWindow(v.Config.LeaseDuration)
				step := window / 12
				var got *result
				var at time.Duration
				for at = 0; at <= 2*window; at += step {
					synctest.Wait()
					select {
					case r := <-done:
						got = &r
					default:
					}
					if got != nil {
						break
					}
					if tt.during != nil && at == 4*step {
						tt.during(t, st, rev)
					}
					clk.Add(step)
				}
				if got == nil {
					t.Fatal("the announce never returned")
				}
				if want := time.Duration(tt.after) * step; at != want {
					t.Fatalf("returned %+v after %v, want %v", got, at, want)
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
				lr.v.Engine.Send(lr.v.PIDs.Lease, messages.PresenceObserved{Instance: "w1", Nonce: tt.nonce, Rev: lr.rev + tt.above})
				synctest.Wait()
				err := lr.v.Outbox.Failure()
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
