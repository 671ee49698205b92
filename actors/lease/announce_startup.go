package lease

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// announceAtStartup writes session nonce to the presence key when the
// worker starts (docs/protocol.md, "Sessions", "Restart with the same id";
// "Joining"): it creates the key, or, finding another session's value
// there, challenges that session (the challenge key) and takes the value
// over once it stood still for twinWindow after the challenge, and returns
// the revision written. A value that moves meanwhile is a live twin's (a
// live session answers a challenge by renewing at once): Fatal, and the
// presence key is not written, so the live worker keeps its session and its
// splits. The challenge key is deleted before it returns. Once gone (the
// lease actor's: Depart began) it does not take the key over.
func announceAtStartup(ctx context.Context, v *worker.Env, nonce string, gone *atomic.Bool) (uint64, error) {
	a := startupAnnounce{v: v, gone: gone, nonce: nonce, key: protocol.WorkerKey(v.ID), window: twinWindow(v.Config.LeaseDuration)}
	defer a.withdrawChallenge(ctx)
	for range 3 {
		rev, done, err := a.create(ctx)
		if err != nil || done {
			return rev, err
		}
		if rev, done, err = a.settle(ctx); err != nil || done {
			return rev, err
		}
	}
	return 0, &coordination.Error{Kind: coordination.Retryable, Reason: "announcing presence: presence key " + a.key + " kept appearing and disappearing; retrying"}
}

// startupAnnounce is the state of one announce at startup: the first
// revision of the key it read, and the challenge it wrote then.
type startupAnnounce struct {
	v            *worker.Env
	gone         *atomic.Bool // the lease actor's departed: Depart began
	nonce        string
	key          string
	window       time.Duration
	first        uint64    // the revision of the first read that found the key (0: none yet)
	since        time.Time // clock time the challenge was written after that read
	challengeRev uint64    // the revision of the challenge key this announce wrote (0: none)
}

// create creates the key; done when it did.
func (a *startupAnnounce) create(ctx context.Context) (uint64, bool, error) {
	c, cancel := a.v.OpCtx(ctx)
	defer cancel()
	rev, ok, err := a.v.Store.Create(c, store.Ephemeral, a.key, presenceValue(a.v, a.nonce, nil))
	if err != nil {
		return 0, false, worker.StoreErr("announcing presence", err)
	}
	return uint64(rev), ok, nil
}

// settle reads the key until it takes it over (done), finds it absent (not
// done: create it), or fails: a live twin, a store error, a cancellation.
func (a *startupAnnounce) settle(ctx context.Context) (uint64, bool, error) {
	for {
		e, found, got, decodeErr, err := a.read(ctx)
		if err != nil {
			return 0, false, err
		}
		silent := a.first != 0 && a.v.Clock.Since(a.since) >= a.window
		switch judgeStartupPresence(a.nonce, a.first, found, uint64(e.Revision), got, decodeErr, silent) {
		case stepCreate:
			return 0, false, nil
		case stepTwin:
			return 0, false, worker.TwinError(a.v.ID)
		case stepWait:
			if a.first == 0 {
				a.first = uint64(e.Revision)
				if err := a.challenge(ctx); err != nil {
					return 0, false, err
				}
				a.since = a.v.Clock.Now()
				a.v.Log.Info("presence key holds another session: challenged it, taking it over unless it moves within the twin window (a restart after a crash); a live worker with this InstanceID answers and this one fails",
					"key", a.key, "window", a.window)
			}
			if err := a.sleep(ctx, min(worker.RenewRetryDelay(a.v.Config.LeaseDuration), a.window-a.v.Clock.Since(a.since))); err != nil {
				return 0, false, err
			}
		case stepTakeOver:
			if a.gone.Load() {
				return 0, false, context.Canceled
			}
			rev, ok, err := a.update(ctx, e.Revision)
			if err != nil || ok {
				return rev, ok, err
			}
			if a.first == 0 {
				a.first = uint64(e.Revision) // the key moved since this read: the next read judges it
			}
		}
	}
}

// read reads the key: the entry, whether it exists, the nonce it carries
// and its decoding error.
func (a *startupAnnounce) read(ctx context.Context) (e store.Entry, found bool, got string, decodeErr, err error) {
	c, cancel := a.v.OpCtx(ctx)
	defer cancel()
	e, found, err = a.v.Store.Get(c, store.Ephemeral, a.key)
	if err != nil {
		return e, false, "", nil, worker.StoreErr("announcing presence", err)
	}
	if found {
		var p protocol.PresenceRecord
		p, decodeErr = protocol.DecodePresence(a.key, e.Value)
		got = p.Nonce
	}
	return e, found, got, decodeErr, nil
}

// update takes the key over at revision rev; ok when it did.
func (a *startupAnnounce) update(ctx context.Context, rev store.Revision) (uint64, bool, error) {
	c, cancel := a.v.OpCtx(ctx)
	defer cancel()
	r, ok, err := a.v.Store.Update(c, store.Ephemeral, a.key, presenceValue(a.v, a.nonce, nil), rev)
	if err != nil {
		return 0, false, worker.StoreErr("announcing presence", err)
	}
	return uint64(r), ok, nil
}

// challenge writes the challenge key, after the first read found another
// session's value (docs/protocol.md, "Sessions", "Restart with the same
// id"): created, or rewritten at the revision read. A live session with
// this InstanceID sees the put on its watch and renews its presence at
// once. A rewrite that loses its compare-and-swap means another put of the
// key landed since: that challenge, written after this announce's first
// read too, is answered the same way.
func (a *startupAnnounce) challenge(ctx context.Context) error {
	c, cancel := a.v.OpCtx(ctx)
	defer cancel()
	key, val := protocol.ChallengeKey(a.v.ID), []byte(a.nonce)
	for range 3 {
		rev, ok, err := a.v.Store.Create(c, store.Ephemeral, key, val)
		if err != nil {
			return worker.StoreErr("announcing presence", err)
		}
		if ok {
			a.challengeRev = uint64(rev)
			return nil
		}
		e, found, err := a.v.Store.Get(c, store.Ephemeral, key)
		if err != nil {
			return worker.StoreErr("announcing presence", err)
		}
		if !found {
			continue
		}
		rev, ok, err = a.v.Store.Update(c, store.Ephemeral, key, val, e.Revision)
		if err != nil {
			return worker.StoreErr("announcing presence", err)
		}
		if ok {
			a.challengeRev = uint64(rev)
		}
		return nil
	}
	return &coordination.Error{Kind: coordination.Retryable, Reason: "announcing presence: challenge key " + key + " kept appearing and disappearing; retrying"}
}

// withdrawChallenge deletes the challenge key this announce wrote, guarded
// by its revision; a failure leaves it to expire with the lease.
func (a *startupAnnounce) withdrawChallenge(ctx context.Context) {
	if a.challengeRev == 0 {
		return
	}
	c, cancel := a.v.OpCtx(ctx)
	defer cancel()
	_, _ = a.v.Store.Delete(c, store.Ephemeral, protocol.ChallengeKey(a.v.ID), store.Revision(a.challengeRev))
}

// sleep waits d on the worker's clock, or until ctx ends.
func (a *startupAnnounce) sleep(ctx context.Context, d time.Duration) error {
	t := a.v.Clock.Timer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
