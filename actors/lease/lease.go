package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Messages the lease actor sends itself from its goroutines.
type (
	startupDone struct {
		rev     uint64
		planned uint64
		err     error
	}
	presenceRenewed struct {
		outcome renewOutcome
		rev     uint64
		at      time.Time // clock time the renewal was sent
		err     error
	}
	sessionAnnounced struct {
		nonce string
		rev   uint64
		at    time.Time
		err   error
	}
	// renewRetryDue is the retry of a failed renewal or announce, armed
	// renewRetryDelay after it failed; round tells a current retry from one
	// a later outcome made moot.
	renewRetryDue struct{ round uint64 }
)

// leaseActor owns this worker's session (docs/protocol.md, "Sessions"): the
// presence key and the heartbeat. It renews the presence once per
// heartbeat and again soon after a failed renewal, ends the session when renewals starve for a full
// LeaseDuration or the key vanished, starts a new session with a new
// nonce, and detects live twins.
//
// It takes StartJob from the handle and joins the job. It tells, each at
// the call that sends it: SessionChanged (a session started, with its
// nonce and the job, or the session ended) to the leader and the split
// writer, and the first session's start to the watch too (the watches
// open); HeartbeatTicked to the leader and the split writer.
type leaseActor struct {
	v   *worker.Env
	log *slog.Logger

	job    wire.Job // the job Start named (StartJob), told with each session's start
	joined bool
	// departed: Depart began (Departing or WithdrawPresence, from the
	// root). Written by this actor only; read by it and by its startup
	// goroutine (startup.go), which then never writes the presence key
	// again. An atomic because that goroutine is not the actor.
	departed     atomic.Bool
	session      string // the current session's nonce, the lease's own (Env.Nonce, then each announced one)
	presenceRev  uint64
	renewals     worker.RenewalClock
	presenceBusy bool
	lapsed       bool       // the session ended; a new one is being announced
	announcing   string     // the nonce of an announce whose write may have landed; the next attempt reuses it
	withdraw     *actor.PID // Depart asked to delete presence while a renewal ran
	answerOwed   bool       // a challenge came while a presence write was in flight: renew again when it returns
	round        uint64
	hb           *clock.Timer
	retryRound   uint64            // the round of the retry armed last; a retry of another round is moot
	retry        *clock.Timer      // the armed retry of a failed renewal or announce
	failures     worker.FailureRun // the failed renewals since the last that landed
	est          estimates         // what the next renewal carries besides the session
}

// New returns the producer of worker v's lease-renewal actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		return &leaseActor{v: v, log: v.Log.With("actor", "lease"), session: v.Nonce, est: newEstimates()}
	}
}

// Receive handles one message.
func (l *leaseActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		worker.StopTimer(l.hb)
		worker.StopTimer(l.retry)
	case wire.StartJob: // from the handle (Start)
		l.job = m.Job
		v, pid, gone := l.v, c.PID(), &l.departed
		v.Go(func(ctx context.Context) {
			rev, planned, err := startup(ctx, v, m.Job.Fingerprint, gone)
			v.Send(pid, startupDone{rev: rev, planned: planned, err: err})
		})
	case startupDone:
		if m.err != nil {
			if l.v.Ctx.Err() == nil && !l.departed.Load() {
				l.v.FailNow(m.err)
			}
			return
		}
		l.joined, l.presenceRev = true, m.rev
		l.renewals.Restart(l.v.Clock.Now())
		// The views are sized for the plan's splits and the watches open.
		// The watch comes last: the leader and the split writer have the job
		// in their inboxes before any observation the watches cause.
		p := l.v.PIDs
		l.v.Tell(wire.SessionChanged{Live: true, Nonce: l.session, Job: l.job, Planned: m.planned}, p.Leader, p.SplitWriter, p.Watch)
		l.schedule(c)
	case wire.HeartbeatDue:
		if m.Round == l.round {
			l.beat(c)
		}
	case renewRetryDue:
		if m.round == l.retryRound && !l.v.Halted() {
			l.keepAlive(c)
		}
	case presenceRenewed:
		l.renewed(c, m)
	case wire.PresenceChanged: // from the watch: puts of this worker's own
		if m.Instance == l.v.ID && !m.Deleted {
			l.observed(m)
		}
	case wire.PresenceChallenged: // from the watch
		if m.Instance == l.v.ID && m.Challenger != l.v.Nonce { // its own, from startup: a delete that failed
			l.challenged(c)
		}
	case sessionAnnounced:
		l.announced(c, m)
	case wire.Departing: // from the root
		l.departed.Store(true)
	case wire.WithdrawPresence: // from the root (Depart)
		l.departed.Store(true)
		l.withdraw = m.ReplyTo
		l.maybeWithdraw()
	case worker.RemainingReported: // from the split writer: a held tenancy's (Remaining 0 when it ended)
		l.est.report(m)
	default:
		l.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// maybeWithdraw deletes the presence key guarded by its revision (Depart)
// once Depart asked for it and no renewal of it is in flight; then it
// answers Depart.
func (l *leaseActor) maybeWithdraw() {
	if l.withdraw == nil || l.presenceBusy {
		return
	}
	reply := l.withdraw
	l.withdraw = nil
	v, rev := l.v, l.presenceRev
	v.Go(func(ctx context.Context) {
		if rev != 0 {
			c, cancel := v.OpCtx(ctx)
			_, _ = v.Store.Delete(c, store.Ephemeral, protocol.WorkerKey(v.ID), store.Revision(rev))
			cancel()
		}
		v.Reply(reply, wire.WithdrawPresenceReply{})
	})
}

func (l *leaseActor) schedule(c *actor.Context) {
	l.round++
	d := heartbeatInterval(l.v.Config.LeaseDuration, l.v.ID, l.v.Nonce, l.round)
	l.hb = l.v.After(d, c.PID(), wire.HeartbeatDue{Round: l.round})
}

// beat is one heartbeat: renew the session, self-fence a starved one, and
// tick the actors that act at every heartbeat.
func (l *leaseActor) beat(c *actor.Context) {
	if l.v.Halted() {
		return // failed or aborted: no further writes, no more beats
	}
	l.schedule(c)
	l.keepAlive(c)
	l.v.Tell(wire.HeartbeatTicked{Round: l.round}, l.v.PIDs.Leader, l.v.PIDs.SplitWriter)
}

// keepAlive self-fences a starved session and renews the presence, or
// announces a new session after one ended; called at every heartbeat and
// at the retry of a failed attempt. One attempt is in flight at a time.
func (l *leaseActor) keepAlive(c *actor.Context) {
	if !l.departed.Load() && !l.lapsed && l.v.Clock.Since(l.renewals.LastOK) >= l.v.Config.LeaseDuration {
		l.log.Warn("presence not renewed for a full LeaseDuration; ending the session")
		l.endSession(c)
	}
	if !l.departed.Load() && !l.presenceBusy {
		if l.lapsed {
			l.announce(c)
		} else {
			l.renewPresence(c)
		}
	}
}

// retrySoon arms the retry of a failed renewal or announce
// (docs/protocol.md, "Sessions"): without it an outage that swallows two
// heartbeats' renewals ends the session even when the store is back well
// before the lease runs out.
func (l *leaseActor) retrySoon(c *actor.Context) {
	l.retryRound++
	worker.StopTimer(l.retry)
	l.retry = l.v.After(worker.RenewRetryDelay(l.v.Config.LeaseDuration), c.PID(), renewRetryDue{round: l.retryRound})
}

// retryMoot disarms the retry once an attempt succeeded.
func (l *leaseActor) retryMoot() {
	l.retryRound++
	worker.StopTimer(l.retry)
}

// endSession drops every held split and pauses claims and leadership until
// a new session is announced (docs/protocol.md, "Sessions").
func (l *leaseActor) endSession(c *actor.Context) {
	l.lapsed = true
	l.v.Tell(wire.SessionChanged{}, l.v.PIDs.Leader, l.v.PIDs.SplitWriter)
}

// renewOutcome classifies a presence renewal.
type renewOutcome int

const (
	renewOK renewOutcome = iota + 1
	renewError
	renewEnded // the key is gone: the session ended in the store
	renewTwin
)

func (l *leaseActor) renewPresence(c *actor.Context) {
	l.presenceBusy = true
	v, pid, rev, nonce := l.v, c.PID(), l.presenceRev, l.session
	remaining := l.est.largest(v.Config.MinCutWeight, v.Config.EffectiveCutInterval() > 0)
	at := v.Clock.Now()
	landed := l.renewals.Sent(at) // a read that finds our nonce proves a write sent no earlier than this landed
	v.Go(func(ctx context.Context) {
		oc, cancel := v.OpCtx(ctx)
		defer cancel()
		key := protocol.WorkerKey(v.ID)
		res := presenceRenewed{at: at}
		r, ok, err := v.Store.Update(oc, store.Ephemeral, key, presenceValue(v, nonce, remaining), store.Revision(rev))
		switch {
		case err != nil:
			res.outcome, res.err = renewError, err
			if coordination.KindOf(err) != coordination.Fatal {
				if got, ok := readBackRenewal(ctx, v, nonce, rev); ok {
					res.outcome, res.rev, res.at, res.err = renewOK, got, landed, nil
				}
			}
		case ok:
			res.outcome, res.rev = renewOK, uint64(r)
		default:
			e, found, err := v.Store.Get(oc, store.Ephemeral, key)
			var pr protocol.PresenceRecord
			if err == nil && found {
				pr, err = protocol.DecodePresence(key, e.Value)
			}
			res.outcome, res.err = judgeRenewal(nonce, found, pr, err)
			res.rev, res.at = uint64(e.Revision), landed
		}
		v.Send(pid, res)
	})
}

// readBackRenewal reads the presence key after a renewal failed (a timeout,
// a lost reply) under a fresh bound: this session's nonce at a revision
// above rev proves that a renewal landed (docs/protocol.md, "Sessions"),
// so a worker whose writes all land keeps its session with its watch down;
// it returns the revision found.
func readBackRenewal(ctx context.Context, v *worker.Env, nonce string, rev uint64) (uint64, bool) {
	oc, cancel := v.ReadBackCtx(ctx)
	defer cancel()
	key := protocol.WorkerKey(v.ID)
	e, found, err := v.Store.Get(oc, store.Ephemeral, key)
	var p protocol.PresenceRecord
	if err == nil && found {
		p, err = protocol.DecodePresence(key, e.Value)
	}
	return uint64(e.Revision), worker.ReadBackLanded(nonce, rev, found, p.Nonce, uint64(e.Revision), err)
}

func (l *leaseActor) renewed(c *actor.Context, m presenceRenewed) {
	l.presenceBusy = false
	if l.withdraw != nil {
		if m.outcome == renewOK && m.rev > l.presenceRev {
			l.presenceRev = m.rev
		}
		l.maybeWithdraw()
		return
	}
	if l.lapsed || l.departed.Load() {
		return
	}
	switch m.outcome {
	case renewOK:
		if m.rev > l.presenceRev {
			l.presenceRev = m.rev
		}
		l.renewals.Landed(m.at)
		l.failures.Landed(l.log, "presence renewed again")
		l.retryMoot()
		l.payAnswer(c)
	case renewError:
		if !l.v.FatalIf(m.err) {
			l.failures.Failed(l.log, "presence renewal failed; will retry", m.err)
			l.retrySoon(c)
		}
	case renewTwin:
		l.v.FailNow(worker.TwinError(l.v.ID))
	case renewEnded:
		l.log.Warn("presence key is gone; ending the session")
		l.endSession(c)
		l.announce(c)
	}
}

// observed applies a put of this worker's own presence key: one carrying
// this session's nonce at a revision newer than the last known proves that
// a renewal landed whose reply was lost or is still on its way, and credits
// it from the oldest renewal sent whose fate is unknown (docs/protocol.md,
// "Sessions"), so a worker whose writes all land never self-fences.
// Another session's nonce there is a live twin that took the key over
// since this session's last known write: Fatal at once, rather than at the
// next renewal, so the twins never both act on the split records.
func (l *leaseActor) observed(m wire.PresenceChanged) {
	if l.lapsed || l.departed.Load() || m.Rev <= l.presenceRev {
		return
	}
	if m.Nonce != l.session {
		if m.Nonce != "" { // "": unreadable; the next renewal judges the key
			l.v.FailNow(worker.TwinError(l.v.ID))
		}
		return
	}
	if l.renewals.Proven(l.presenceBusy) {
		l.presenceRev = m.Rev
	}
}

// challenged answers a challenge of a process starting with this
// InstanceID (docs/protocol.md, "Sessions", "Restart with the same id"):
// it renews the presence at once, so the key moves within the challenger's
// window and the challenger fails as a twin instead of taking the session
// over. A renewal or announce in flight answers when it lands, but one may
// have landed before the challenger read the key: renew again after it.
func (l *leaseActor) challenged(c *actor.Context) {
	if !l.joined || l.departed.Load() || l.v.Halted() {
		return
	}
	l.log.Warn("a process starting with this InstanceID challenged the presence key; renewing at once so it fails as a twin", "key", protocol.ChallengeKey(l.v.ID))
	if l.presenceBusy {
		l.answerOwed = true
		return
	}
	l.keepAlive(c)
}

// payAnswer renews the presence once more when a challenge came while the
// write that just returned was in flight.
func (l *leaseActor) payAnswer(c *actor.Context) {
	if l.answerOwed && !l.presenceBusy && !l.v.Halted() {
		l.answerOwed = false
		l.keepAlive(c)
	}
}

// announce starts a new session: a fresh nonce, written to the presence key
// (created, or taken over from the ended session).
func (l *leaseActor) announce(c *actor.Context) {
	l.presenceBusy = true
	v, pid, old := l.v, c.PID(), l.session
	if l.announcing == "" {
		l.announcing = worker.RandomHex()
	}
	nonce := l.announcing
	at := v.Clock.Now()
	v.Go(func(ctx context.Context) {
		rev, err := announceSession(ctx, v, nonce, old)
		v.Send(pid, sessionAnnounced{nonce: nonce, rev: rev, at: at, err: err})
	})
}

func (l *leaseActor) announced(c *actor.Context, m sessionAnnounced) {
	l.presenceBusy = false
	if m.err == nil {
		l.announcing = ""
	}
	if l.withdraw != nil {
		if m.err == nil {
			l.session = m.nonce
			l.presenceRev = m.rev
		}
		l.maybeWithdraw()
		return
	}
	if l.departed.Load() {
		return
	}
	if m.err != nil {
		if !l.v.FatalIf(m.err) {
			l.log.Warn("announcing a new session failed; will retry", "err", m.err)
			l.retrySoon(c)
		}
		return
	}
	l.retryMoot()
	l.session = m.nonce
	l.lapsed, l.presenceRev = false, m.rev
	l.renewals.Restart(m.at)
	l.log.Info("new session announced")
	p := l.v.PIDs
	l.v.Tell(wire.SessionChanged{Live: true, Nonce: m.nonce, Job: l.job}, p.Leader, p.SplitWriter)
	l.payAnswer(c)
}
