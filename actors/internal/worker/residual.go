package worker

import (
	"context"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// CreateResidual runs step 3 of a runtime split (docs/protocol.md, "Runtime
// split", "The steps"): the residual records of cut c of split parent,
// which must already be durable in parent's progress record. It creates
// spec.R, then job.split.R, each create-if-absent under the cut's id; a
// lost create reads the record and accepts it only if it is the one this
// cut makes (an earlier attempt, or a roll-forward). generation is the
// parent spec's (a residual's spec copies it, so every writer writes the
// same bytes). A create whose reply was lost is decided by reading the
// key back, as a lost create is.
//
// nil means the residual is confirmed (both records exist). A store error
// is Retryable (the caller retries while the tenancy lasts); a foreign
// record under either key, or one that does not decode, is Fatal naming
// the key. It blocks for the store calls, bounded by ctx.
func CreateResidual(ctx context.Context, v *Env, fp uint64, parent coordination.SplitID, c protocol.Cut, generation uint64) error {
	specKey := protocol.SpecKey(c.ID)
	spec := c.ResidualSpec(fp, generation)
	found, err := createOrRead(ctx, v, specKey, protocol.EncodeSpec(spec), func(b []byte) (bool, error) {
		got, err := protocol.DecodeSpec(specKey, b, fp)
		return err == nil && c.IsResidualSpec(got), err
	})
	if err != nil || !found {
		return residualErr(parent, c, specKey, err)
	}
	splitKey := protocol.SplitKey(c.ID)
	rec := c.ResidualSplit(parent, fp, v.NowMs())
	found, err = createOrRead(ctx, v, splitKey, protocol.EncodeSplit(rec), func(b []byte) (bool, error) {
		got, err := protocol.DecodeSplit(splitKey, b, fp)
		return err == nil && c.IsResidualSplit(parent, got), err
	})
	if err != nil || !found {
		return residualErr(parent, c, splitKey, err)
	}
	return nil
}

// createOrRead creates key (durable) with b, or, when the create loses,
// reads the record and judges it with same: found reports that the key
// holds this cut's record (created or found). A create that errs
// Retryable (its reply lost: it may have landed) is decided the same way,
// by reading the key back: the record this cut makes is found, an absent
// one returns the create's error. A record same rejects is a Fatal
// collision; a decode error is returned as is (Fatal).
func createOrRead(ctx context.Context, v *Env, key string, b []byte, same func([]byte) (bool, error)) (found bool, err error) {
	_, ok, createErr := v.Store.Create(ctx, store.Durable, key, b)
	switch {
	case createErr != nil && coordination.KindOf(createErr) == coordination.Fatal:
		return false, StoreErr("creating "+key, createErr)
	case createErr == nil && ok:
		return true, nil
	}
	e, found, err := v.Store.Get(ctx, store.Durable, key)
	switch {
	case err != nil:
		return false, StoreErr("reading "+key, err)
	case !found && createErr != nil:
		return false, StoreErr("creating "+key, createErr) // it did not land
	case !found:
		return false, nil // deleted between the create and the read: try again
	}
	ok, err = same(e.Value)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, ResidualCollision(key)
	}
	return true, nil
}

// residualErr is the error of an unconfirmed residual create: err as is,
// or, for a record that vanished between a lost create and its read, a
// Retryable naming the key.
func residualErr(parent coordination.SplitID, c protocol.Cut, key string, err error) error {
	if err != nil {
		return err
	}
	return coordination.Errorf(coordination.Retryable, "split %s: residual %s of its cut %d: %s vanished after a lost create; retry", parent, c.ID, c.Counter, key)
}

// ResidualCollision is the Fatal of a residual's create that found another
// record under its key: only a collision of ids or a write outside the
// library can cause it (docs/protocol.md, "Runtime split", "The steps").
func ResidualCollision(key string) error {
	return coordination.Errorf(coordination.Fatal, "%s: a record that is not this cut's residual holds the key (an id collision or a write outside the library); nothing was overwritten", key)
}
