package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// startup runs the three startup phases of docs/protocol.md "Joining" on the calling goroutine
// and returns the presence revision and the plan record's planned count, or
// a Fatal error. Once gone (the lease actor's: Depart began) it does not
// write the presence key.
func startup(ctx context.Context, v *worker.Env, fingerprint string, gone *atomic.Bool) (rev, planned uint64, err error) {
	err = runPhase(ctx, v, "store probe", func(ctx context.Context) error { return probe(ctx, v) })
	if err != nil {
		return 0, 0, err
	}
	err = runPhase(ctx, v, "joining the job", func(ctx context.Context) (err error) {
		planned, err = join(ctx, v, fingerprint)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	err = runPhase(ctx, v, "announcing presence", func(ctx context.Context) (err error) {
		if gone.Load() {
			return context.Canceled
		}
		rev, err = announceAtStartup(ctx, v, v.Nonce, gone)
		return err
	})
	return rev, planned, err
}

// runPhase gives one phase StartupMaxAttempts attempts with a real-time
// backoff of 200ms doubling to 5s between them.
func runPhase(ctx context.Context, v *worker.Env, phase string, f func(context.Context) error) error {
	backoff := 200 * time.Millisecond
	n := v.Config.StartupMaxAttempts
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if coordination.KindOf(err) == coordination.Fatal {
			return err
		}
		if attempt >= n {
			return coordination.Errorf(coordination.Fatal, "%s failed %d times in a row; giving up: %s", phase, n, worker.ReasonOf(err))
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		if worker.ReasonOf(err) == errPlanRace {
			// The plan record exists now: read it at once. Workers that
			// start together all race for it, and a backoff here would
			// spread their joins beyond the startup hold's quiet interval.
			v.Log.Debug("startup phase failed; retrying", "reason", phase, "err", err)
			continue
		}
		v.Log.Warn("startup phase failed; retrying", "reason", phase, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// probe checks, on a key of this process's own in both keyspaces (named by
// its first session's nonce), that the store enforces create-if-absent and
// compare-and-swap (docs/protocol.md, "Joining").
func probe(ctx context.Context, v *worker.Env) error {
	key := protocol.ProbeKey(v.Nonce)
	val := []byte(v.Nonce)
	// call runs one store call under OpTimeout; a store error is the
	// phase's error.
	call := func(f func(ctx context.Context) (bool, error)) (bool, error) {
		c, cancel := v.OpCtx(ctx)
		defer cancel()
		ok, err := f(c)
		if err != nil {
			return false, worker.StoreErr("store probe", err)
		}
		return ok, nil
	}
	for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
		var rev, rev2 store.Revision
		ok, err := call(func(c context.Context) (ok bool, err error) {
			if rev, ok, err = v.Store.Create(c, ks, key, val); err == nil && !ok {
				_, err = v.Store.Delete(c, ks, key, 0)
			}
			return ok, err
		})
		if err != nil {
			return err
		}
		if !ok {
			return &coordination.Error{Kind: coordination.Retryable, Reason: "store probe: a probe key of an earlier attempt was present; removed it, retrying"}
		}
		// Each check is a call and the answer a sound store gives.
		checks := []struct {
			f      func(ctx context.Context) (bool, error)
			want   bool
			reason string
		}{
			{func(c context.Context) (bool, error) {
				_, ok, err := v.Store.Create(c, ks, key, val)
				return ok, err
			}, false, "store probe: a second create of the same key succeeded; this store does not enforce create-if-absent and cannot host coordination"},
			{func(c context.Context) (ok bool, err error) {
				rev2, ok, err = v.Store.Update(c, ks, key, val, rev)
				return ok, err
			}, true, "store probe: an update at the current revision was refused; this store's compare-and-swap is broken and it cannot host coordination"},
			{func(c context.Context) (bool, error) {
				_, ok, err := v.Store.Update(c, ks, key, val, rev)
				return ok, err
			}, false, "store probe: an update at a stale revision succeeded; this store does not enforce compare-and-swap and cannot host coordination"},
		}
		for _, ch := range checks {
			ok, err := call(ch.f)
			if err != nil {
				return err
			}
			if ok != ch.want {
				return &coordination.Error{Kind: coordination.Fatal, Reason: ch.reason}
			}
		}
		if _, err := call(func(c context.Context) (bool, error) {
			_, err := v.Store.Delete(c, ks, key, rev2)
			return true, err
		}); err != nil {
			return err
		}
	}
	return nil
}

// errPlanRace is the reason of a lost race to create the plan record: a
// normal event when workers start together.
const errPlanRace = "another worker created the plan record first; reading it"

// join reads the plan record, or creates it, and returns its planned count.
func join(ctx context.Context, v *worker.Env, fingerprint string) (uint64, error) {
	c, cancel := v.OpCtx(ctx)
	defer cancel()
	e, ok, err := v.Store.Get(c, store.Durable, protocol.KeyPlan)
	if err != nil {
		return 0, worker.StoreErr("joining the job", err)
	}
	if ok {
		pl, err := protocol.DecodePlan(protocol.KeyPlan, e.Value)
		if err != nil {
			return 0, err
		}
		if pl.Fingerprint != fingerprint {
			return 0, protocol.FingerprintMismatch(pl.Fingerprint, fingerprint)
		}
		return pl.Planned, nil
	}
	plan := protocol.NewPlan(fingerprint, v.NowMs())
	if err := protocol.CheckPlanSize(plan, v.ValueCap); err != nil {
		return 0, err
	}
	_, ok, err = v.Store.Create(c, store.Durable, protocol.KeyPlan, protocol.EncodePlan(plan))
	if err != nil {
		return 0, worker.StoreErr("joining the job", err)
	}
	if !ok {
		return 0, &coordination.Error{Kind: coordination.Retryable, Reason: errPlanRace}
	}
	return 0, nil
}

// presenceValue is the presence value of session nonce carrying the
// remaining-work estimates remaining (nil: none; docs/protocol.md,
// "Runtime split").
func presenceValue(v *worker.Env, nonce string, remaining []protocol.Estimate) []byte {
	return protocol.EncodePresence(protocol.PresenceRecord{Nonce: nonce, MaxInFlight: uint32(v.Config.MaxInFlight), Remaining: remaining})
}

// announceSession writes the new session nonce to the presence key after
// session ended (docs/protocol.md, "Sessions"): created, or taken over at
// the revision found when it carries that session's value, or nonce's own
// (an earlier attempt of this announce landed although it reported an
// error); another nonce there is a live twin (Fatal). At startup
// [announceAtStartup] announces instead.
func announceSession(ctx context.Context, v *worker.Env, nonce, ended string) (uint64, error) {
	c, cancel := v.OpCtx(ctx)
	defer cancel()
	key := protocol.WorkerKey(v.ID)
	rev, ok, err := v.Store.Create(c, store.Ephemeral, key, presenceValue(v, nonce, nil))
	if err != nil {
		return 0, worker.StoreErr("announcing presence", err)
	}
	if ok {
		return uint64(rev), nil
	}
	e, ok, err := v.Store.Get(c, store.Ephemeral, key)
	if err != nil {
		return 0, worker.StoreErr("announcing presence", err)
	}
	if !ok {
		return 0, &coordination.Error{Kind: coordination.Retryable, Reason: "presence key disappeared during takeover"}
	}
	if p, err := protocol.DecodePresence(key, e.Value); judgeTakeover(ended, nonce, p, err) {
		return 0, worker.TwinError(v.ID)
	}
	rev, ok, err = v.Store.Update(c, store.Ephemeral, key, presenceValue(v, nonce, nil), e.Revision)
	if err != nil {
		return 0, worker.StoreErr("announcing presence", err)
	}
	if !ok {
		return 0, &coordination.Error{Kind: coordination.Retryable, Reason: "presence key changed during takeover"}
	}
	return uint64(rev), nil
}
