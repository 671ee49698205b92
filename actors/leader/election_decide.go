package leader

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

// electOutcome is the fate of one Create of the leader key (docs/protocol.md,
// "Leadership").
type electOutcome int

const (
	electWon    electOutcome = iota + 1 // the key is ours: a term starts
	electLost                           // another worker holds the key
	electFailed                         // the store failed; a later tick stands again
)

// judgeElection classifies the reply to the leader key's Create.
func judgeElection(ok bool, err error) electOutcome {
	switch {
	case err != nil:
		return electFailed
	case ok:
		return electWon
	}
	return electLost
}

// leaderRenewal is the fate of one renewal of the leader key
// (docs/protocol.md, "Leadership").
type leaderRenewal int

const (
	leaderRenewed      leaderRenewal = iota + 1 // it landed: its reply said so, or a read found this session's key
	leaderRenewUnknown                          // the store failed; the next heartbeat renews again
	leaderRenewLost                             // the key is gone or another session's: leadership is lost
	leaderRenewRead                             // the compare was lost: read the key to learn which
)

// judgeLeaderUpdate classifies the reply to a renewal's compare-and-swap.
func judgeLeaderUpdate(ok bool, err error) leaderRenewal {
	switch {
	case err != nil:
		return leaderRenewUnknown
	case ok:
		return leaderRenewed
	}
	return leaderRenewRead
}

// judgeLeaderRead classifies a lost renewal compare of the leader key held
// under session nonce from the Get that followed it: found and lr are the
// read's result, readErr its error (a decoding error included).
func judgeLeaderRead(nonce string, found bool, lr protocol.LeaderRecord, readErr error) (leaderRenewal, error) {
	if readErr != nil {
		return leaderRenewUnknown, readErr
	}
	if worker.JudgeHolder(nonce, found, lr.Nonce) == worker.HolderMine {
		return leaderRenewed, nil // an earlier renewal landed
	}
	return leaderRenewLost, nil // gone, or another session's
}

// leaderSighting is what a watched put of the leader key means to the term
// that holds it under nonce at revision rev.
type leaderSighting int

const (
	sightingNothing leaderSighting = iota // the put this term already knows
	sightingLanded                        // this term's key at a newer revision: a renewal landed unseen
	sightingLost                          // another session's key: leadership is lost
)

// judgeLeaderPut classifies a put of the leader key carrying put at
// revision putRev, seen by the term holding the key under nonce at rev.
func judgeLeaderPut(nonce string, rev uint64, put protocol.LeaderRecord, putRev uint64) leaderSighting {
	switch {
	case worker.JudgeHolder(nonce, true, put.Nonce) == worker.HolderOther:
		return sightingLost
	case putRev > rev:
		return sightingLanded
	}
	return sightingNothing
}

// judgeLeaderDelete reports whether a delete of the leader key at revision
// delRev (synthesized: inferred from a reconcile listing that lacks the key)
// ends the term holding it at rev: an observed delete older than the term's
// own key is a stale event.
func judgeLeaderDelete(synthesized bool, delRev, rev uint64) bool {
	return synthesized || delRev > rev
}

// fenceStep is the generation fence's next step after one store reply
// (docs/protocol.md, "Leadership").
type fenceStep int

const (
	fenceLanded fenceStep = iota + 1 // the plan record carries this generation now
	fenceRetry                       // a transient failure: try again
	fenceRead                        // the compare was lost: read the plan record
	fenceRebase                      // the read found this job's plan: fence from it
	fenceNewer                       // a newer generation holds the plan, or the tries ran out: step down
	fenceFatal                       // the error is Fatal
)

// judgeFenceWrite classifies the reply to the fence's compare-and-swap of
// the plan record.
func judgeFenceWrite(ok bool, err error) (fenceStep, error) {
	switch {
	case err != nil && coordination.KindOf(err) == coordination.Fatal:
		return fenceFatal, err
	case err != nil:
		return fenceRetry, nil
	case ok:
		return fenceLanded, nil
	}
	return fenceRead, nil
}

// judgeFenceRead classifies the read that follows a lost fence compare:
// getErr is the Get's error, found and pl its result, decodeErr the error of
// decoding it, fingerprint this worker's job.
func judgeFenceRead(getErr error, found bool, pl protocol.PlanRecord, decodeErr error, fingerprint string) (fenceStep, error) {
	switch {
	case getErr != nil:
		return fenceRetry, nil
	case !found:
		return fenceFatal, worker.PlanMissing
	case decodeErr != nil:
		return fenceFatal, decodeErr
	case pl.Fingerprint != fingerprint:
		return fenceFatal, protocol.FingerprintMismatch(pl.Fingerprint, fingerprint)
	}
	return fenceRebase, nil
}
