package splitwriter

import (
	"context"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// fenceTries bounds the re-reads of a progress fence that keeps losing to
// the previous tenancy's commits.
const fenceTries = 8

// claimSplit runs the claim protocol (docs/protocol.md, "Claim protocol")
// for m, or a quarantine on takeover: confirm the owner's session ended,
// read the spec (claims only), CAS the split record, then fence the
// progress record and roll forward the cut it carries, if any
// (docs/protocol.md, "Runtime split", "Roll-forward"). It runs on its own
// goroutine.
func claimSplit(ctx context.Context, v *worker.Env, m claimRequest, now int64) claimed {
	if m.Complete {
		return completeClaim(ctx, v, m, now)
	}
	cand, base, rev := m.Candidate, m.Record, m.RecordRev
	if cand.Confirm {
		live, err := sessionLive(ctx, v, base.Owner, base.Nonce)
		if err != nil || live {
			return claimed{outcome: worker.CASFenced, retry: err != nil}
		}
	}
	var spec protocol.SpecRecord
	if !cand.Quarantine {
		var err error
		if spec, err = readSpec(ctx, v, m.FP, cand.ID); err != nil {
			v.FatalIf(err)
			return claimed{outcome: worker.CASUnconfirmed, retry: true}
		}
	}
	nonce := m.Nonce
	var want protocol.SplitRecord
	if cand.Quarantine {
		want = base.QuarantineOnTakeover(now)
	} else {
		want = base.Claim(v.ID, nonce, base.NextEpoch(), cand.Kind.ConsumesAttempt(), now)
	}
	key := protocol.SplitKey(cand.ID)
	start := time.Now()
	r, ok, err := v.Store.Update(ctx, store.Durable, key, protocol.EncodeSplit(want), store.Revision(rev))
	oc := judgeClaimWrite(ok, err)
	v.Metrics.Write(worker.WriteLabel(ok, err), time.Since(start))
	if oc != worker.CASLanded {
		v.FatalIf(err)
		return claimed{outcome: oc, retry: err != nil}
	}
	d := claimed{outcome: worker.CASLanded, rec: want, rev: uint64(r), kind: cand.Kind, quar: cand.Quarantine, spec: spec.Spec(), gen: spec.Generation}
	if cand.Quarantine {
		return d
	}
	prog, progRev, res := fenceProgress(ctx, v, m.FP, cand.ID, want.Epoch, base.Epoch == 0, now)
	rollFailed := false
	if (res == fenceWon || res == fenceCompleted) && prog.Cut != nil {
		// The fenced record's cut may not have its residual yet: create it
		// before the tenancy begins or the split completes. If it does not
		// confirm, the claim fails like a fence that could not be written,
		// and the split is failed rather than handed back: charged, so a
		// cut whose residual can never be created is quarantined after
		// MaxAttempts claims instead of being claimed at a new epoch every
		// heartbeat (docs/protocol.md, "Runtime split", "Roll-forward").
		if err := worker.CreateResidual(ctx, v, m.FP, cand.ID, *prog.Cut, spec.Generation); err != nil {
			if !v.FatalIf(err) {
				v.Log.Warn("roll-forward of a cut did not confirm; failing the split, charged one attempt, and retrying the claim", "split", cand.ID, "epoch", want.Epoch, "err", err)
			}
			res, rollFailed = fenceFailed, true
		}
	}
	switch res {
	case fenceWon:
		d.prog, d.progRev = prog, progRev
	case fenceCompleted:
		// The previous tenancy completed the split after all: complete its
		// record instead of delivering it. A completion that errs is
		// retried alone at the next heartbeat (completeClaim): the record
		// now names this live session, so no newer revision of it comes
		// (peers and the leader take it as held) and only this worker can
		// complete it (docs/protocol.md, "Claim protocol").
		d.done = true
		done := want.Complete(now)
		r2, ok, err := v.Store.Update(ctx, store.Durable, key, protocol.EncodeSplit(done), store.Revision(r))
		if err == nil && ok {
			d.rec, d.rev = done, uint64(r2)
		}
		if d.retry = err != nil; d.retry {
			warnCompletionRetry(v, cand.ID, want.Epoch, err)
		}
	case fenceSuperseded:
		// The progress record is at or above the epoch this claim wrote:
		// only lost writes (a rolled-back store) or a hand edit put it
		// there, and no later claim will own the split record. Hand the
		// split back at the progress record's epoch, so that its next claim
		// fences above it and the split runs on (docs/protocol.md, "Claim
		// protocol").
		v.Log.Warn("progress record is at or above this claim's epoch (the store lost writes, or the record was edited); handing the split back above it",
			"split", cand.ID, "claim_epoch", want.Epoch, "progress_epoch", prog.Epoch)
		// Retried at the next heartbeat: the hand-back is the newest
		// revision this worker knows, so it would not wake the claim.
		d.outcome, d.retry = worker.CASFenced, true
		back := want.HandBack(now)
		back.Epoch = max(back.Epoch, prog.Epoch)
		if r2, ok, err := v.Store.Update(ctx, store.Durable, key, protocol.EncodeSplit(back), store.Revision(r)); err == nil && ok {
			d.rec, d.rev = back, uint64(r2)
		}
	case fenceFailed:
		// Without a fence (or its roll-forward) the split cannot be
		// delivered: hand the record back, or fail it after a roll-forward
		// (if that fails too, it is a leftover of this session).
		d.outcome, d.retry = worker.CASUnconfirmed, true
		back := want.HandBack(now)
		if rollFailed {
			back = want.Fail(v.Config.MaxAttempts, now)
		}
		if r2, ok, err := v.Store.Update(ctx, store.Durable, key, protocol.EncodeSplit(back), store.Revision(r)); err == nil && ok {
			d.rec, d.rev = back, uint64(r2)
		}
	}
	return d
}

// completeClaim retries the completion of the split record m.Record, a
// claim of this worker whose fence found the progress record completed and
// whose completion erred (docs/protocol.md, "Claim protocol", step 3). The
// record names this worker at the claim's epoch, so the completion is
// written over it as it stands: no new epoch, no attempt, no second fence.
// A record that moved meanwhile fences the write, and the usual rules
// apply to the newer revision.
func completeClaim(ctx context.Context, v *worker.Env, m claimRequest, now int64) claimed {
	id := m.Candidate.ID
	res := casSplit(ctx, v, m.FP, id, m.Record.Epoch, "completing", worker.SplitEntry{Rec: m.Record, Rev: m.RecordRev}, func(r protocol.SplitRecord) protocol.SplitRecord {
		return r.Complete(now)
	})
	d := claimed{outcome: res.Outcome, rec: res.Rec, rev: res.Rev, kind: m.Candidate.Kind, done: true}
	switch res.Outcome {
	case worker.CASFatal:
		v.FailNow(res.Err)
	case worker.CASUnconfirmed:
		d.retry = true
		warnCompletionRetry(v, id, m.Record.Epoch, res.Err)
	}
	return d
}

// readSpec reads split id's spec record. A split record implies its spec
// (seeding, or a cut's residual, writes it first), so a missing one was
// deleted outside the library: Fatal.
func readSpec(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID) (protocol.SpecRecord, error) {
	key := protocol.SpecKey(id)
	e, found, err := v.Store.Get(ctx, store.Durable, key)
	switch {
	case err != nil:
		return protocol.SpecRecord{}, err
	case !found:
		return protocol.SpecRecord{}, worker.SpecMissing(id, key)
	}
	return protocol.DecodeSpec(key, e.Value, fp)
}

// sessionLive reads instance's presence and reports whether it still
// carries session nonce.
func sessionLive(ctx context.Context, v *worker.Env, instance, nonce string) (bool, error) {
	key := protocol.WorkerKey(instance)
	e, found, err := v.Store.Get(ctx, store.Ephemeral, key)
	if err != nil || !found {
		return false, err
	}
	p, err := protocol.DecodePresence(key, e.Value)
	return err == nil && worker.JudgeHolder(nonce, true, p.Nonce) == worker.HolderMine, nil
}

// fenceProgress raises split id's progress record to epoch for this worker
// (creating it if absent), re-reading while commits of the previous tenancy
// move it; it returns the fenced record and its revision. A split never
// owned before (first) usually has no progress record, so its create is
// tried without a read first.
func fenceProgress(ctx context.Context, v *worker.Env, fp uint64, id coordination.SplitID, epoch uint64, first bool, now int64) (protocol.ProgressRecord, uint64, fenceResult) {
	key := protocol.ProgressKey(id)
	for try := range fenceTries {
		var e store.Entry
		found := false
		if !first || try > 0 {
			var err error
			if e, found, err = v.Store.Get(ctx, store.Durable, key); err != nil {
				return protocol.ProgressRecord{}, 0, fenceFailed
			}
		}
		if !found {
			if !first {
				// Every split owned before has a progress record (its first
				// fence created it): this one was deleted outside the library
				// (docs/protocol.md, "Missing records").
				v.Log.Warn("progress record missing (deleted outside the library); recreating it empty, the split replays from its start", "split", id, "key", key, "epoch", epoch)
			}
			fresh := protocol.FreshProgress(id, fp, v.ID, epoch, now)
			r, ok, err := v.Store.Create(ctx, store.Durable, key, protocol.EncodeProgress(fresh))
			if err != nil {
				v.FatalIf(err)
				return protocol.ProgressRecord{}, 0, fenceFailed
			}
			if ok {
				return fresh, uint64(r), fenceWon
			}
			continue
		}
		got, err := protocol.DecodeProgress(key, e.Value, fp)
		if err != nil {
			v.FatalIf(err)
			return protocol.ProgressRecord{}, 0, fenceFailed
		}
		if res, done := judgeProgressFence(got, epoch); done {
			return got, uint64(e.Revision), res
		}
		want := got.Fence(v.ID, epoch, now)
		r, ok, err := v.Store.Update(ctx, store.Durable, key, protocol.EncodeProgress(want), e.Revision)
		if err != nil {
			v.FatalIf(err)
			return protocol.ProgressRecord{}, 0, fenceFailed
		}
		if ok {
			return want, uint64(r), fenceWon
		}
	}
	return protocol.ProgressRecord{}, 0, fenceFailed
}

// warnCompletionRetry fails the worker on a Fatal err of a claim's
// completion, or logs that the completion is retried at the next
// heartbeat.
func warnCompletionRetry(v *worker.Env, id coordination.SplitID, epoch uint64, err error) {
	if !v.FatalIf(err) {
		v.Log.Warn("completing a split whose progress record is completed did not confirm; retrying at the next heartbeat", "split", id, "epoch", epoch, "err", err)
	}
}
