package lease

import (
	"context"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// announceAtStartup writes session nonce to the presence key when the
// worker starts (docs/protocol.md, "Sessions", "Restart with the same id";
// "Joining"): it creates the key, or takes over a predecessor's value once
// that value stood still for twinWindow, and returns the revision written.
// A value that moves meanwhile is a live twin's: Fatal, and nothing is
// written, so the live worker keeps its session and its splits.
func announceAtStartup(ctx context.Context, v *worker.Env, nonce string) (uint64, error) {
	a := startupAnnounce{v: v, nonce: nonce, key: protocol.WorkerKey(v.ID), window: twinWindow(v.Config.LeaseDuration)}
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
// revision of the key it read and when.
type startupAnnounce struct {
	v      *worker.Env
	nonce  string
	key    string
	window time.Duration
	first  uint64    // the revision of the first read that found the key (0: none yet)
	since  time.Time // clock time of that read
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
				a.first, a.since = uint64(e.Revision), a.v.Clock.Now()
				a.v.Log.Info("presence key holds another session: taking it over once it stood still for the twin window (a restart after a crash); a live worker with this InstanceID renews it and this one fails",
					"key", a.key, "window", a.window)
			}
			if err := a.sleep(ctx, min(worker.RenewRetryDelay(a.v.Config.LeaseDuration), a.window-a.v.Clock.Since(a.since))); err != nil {
				return 0, false, err
			}
		case stepTakeOver:
			if a.v.Gone.Load() {
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
