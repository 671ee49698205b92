package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// Messages the lease actor sends itself from its goroutines.
type (
	startupDone struct {
		rev uint64
		err error
	}
	presenceRenewed struct {
		rev uint64 // 0: not renewed
		err error
	}
	leaseRenewed struct {
		split   coordination.SplitID
		epoch   uint64
		outcome renewOutcome
		rev     uint64
		at      time.Time
		err     error
	}
	leaseDeleted struct{}
	claimLeased  struct {
		claim messages.ClaimSplit
		epoch uint64
		rev   uint64 // 0: the lease write lost or failed
		at    time.Time
	}
)

// leaseTenancy is the lease bookkeeping of one held split.
type leaseTenancy struct {
	epoch    uint64
	rev      uint64
	lastOK   time.Time // clock time of the last successful lease write
	lastTry  time.Time // clock time the last renewal started
	inflight bool
}

// lease owns the presence key, the held splits' lease revisions and the
// heartbeat: presence renewal, lease renewal, self-fencing and twin
// detection (§17), plus the lease write of a claim (§16.4 step 2).
type lease struct {
	v   *env
	log *slog.Logger

	fingerprint  string
	joined       bool
	departed     bool
	presenceRev  uint64
	presenceBusy bool
	withdraw     *actor.PID // Depart asked to delete presence while a renewal ran
	round        uint64
	hb           *clock.Timer

	deletes  int // guarded lease deletes in flight; Depart's presence delete waits for them
	held     map[coordination.SplitID]*leaseTenancy
	ended    map[coordination.SplitID]leaseTenancy // surrendered, awaiting the hand-back outcome
	claiming map[coordination.SplitID]claimLeased  // lease written, record CAS pending
}

func newLease(v *env) actor.Producer {
	return func() actor.Receiver {
		return &lease{
			v:        v,
			log:      v.log.With("actor", "lease"),
			held:     map[coordination.SplitID]*leaseTenancy{},
			ended:    map[coordination.SplitID]leaseTenancy{},
			claiming: map[coordination.SplitID]claimLeased{},
		}
	}
}

// Receive handles one message.
func (l *lease) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		stopTimer(l.hb)
	case messages.JobStarted:
		l.fingerprint = m.Fingerprint
		v, pid := l.v, c.PID()
		v.goFunc(func(ctx context.Context) {
			rev, err := startup(ctx, v, m.Fingerprint)
			v.send(pid, startupDone{rev: rev, err: err})
		})
	case startupDone:
		if m.err != nil {
			if l.v.ctx.Err() == nil && !l.v.gone.Load() {
				l.v.failNow(m.err)
			}
			return
		}
		l.joined, l.presenceRev = true, m.rev
		c.Send(l.v.pid.watch, messages.Joined{})
		l.schedule(c)
	case messages.HeartbeatDue:
		if m.Round == l.round {
			l.beat(c)
		}
	case presenceRenewed:
		l.presenceBusy = false
		if m.rev != 0 {
			l.presenceRev = m.rev
		}
		if l.withdraw != nil {
			l.maybeWithdraw()
			return
		}
		if m.err != nil && !l.v.fatalIf(m.err) {
			l.log.Warn("presence renewal failed; will retry", "error", m.err)
		}
	case leaseRenewed:
		l.renewed(c, m)
	case messages.LeaseObserved:
		l.observed(c, m)
	case messages.LeaseDeleted:
		if t, ok := l.held[m.Split]; ok && !m.Synthesized && m.Rev > t.rev {
			l.drop(c, m.Split, t, messages.EndStarved)
		}
	case messages.ClaimSplit:
		l.claim(c, m)
	case claimLeased:
		if m.rev == 0 {
			c.Send(l.v.pid.assign, messages.ClaimAbandoned{Split: m.claim.Candidate.ID})
			return
		}
		l.claiming[m.claim.Candidate.ID] = m
		c.Send(l.v.pid.commit, messages.ClaimRecord{Claim: m.claim, Epoch: m.epoch, LeaseRev: m.rev})
	case messages.TenancyStarted:
		cl, ok := l.claiming[m.Split]
		delete(l.claiming, m.Split)
		at := l.v.clk.Now()
		if ok {
			at = cl.at
		}
		l.held[m.Split] = &leaseTenancy{epoch: m.Epoch, rev: m.LeaseRev, lastOK: at, lastTry: at}
		delete(l.ended, m.Split)
	case messages.TenancyEnded:
		if t, ok := l.held[m.Split]; ok && t.epoch == m.Epoch {
			delete(l.held, m.Split)
			if m.Reason != messages.EndFenced && m.Reason != messages.EndStarved {
				l.ended[m.Split] = *t
			}
		}
	case messages.HandBackResolved:
		t, ok := l.ended[m.Split]
		if h, isHeld := l.held[m.Split]; isHeld && h.epoch == m.Epoch {
			t, ok = *h, true
			delete(l.held, m.Split)
		}
		if ok && t.epoch == m.Epoch {
			delete(l.ended, m.Split)
			if m.Outcome != messages.HandBackFenced {
				l.deleteLease(m.Split, t.rev, t.epoch)
			}
		}
	case messages.DeleteLease:
		delete(l.claiming, m.Split)
		l.deleteLease(m.Split, m.Rev, 0)
	case messages.Departing:
		l.departed = true
	case messages.WithdrawPresence:
		l.departed = true
		l.withdraw = m.ReplyTo
		l.maybeWithdraw()
	case leaseDeleted:
		l.deletes--
		l.maybeWithdraw()
	case messages.WatchesChanged:
	default:
		l.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// maybeWithdraw deletes the presence key guarded by its revision (§21.1
// step 4) once Depart asked for it, no renewal of it is in flight and the
// hand-backs' lease deletes finished; then it answers Depart.
func (l *lease) maybeWithdraw() {
	if l.withdraw == nil || l.presenceBusy || l.deletes > 0 {
		return
	}
	reply := l.withdraw
	l.withdraw = nil
	v, rev := l.v, l.presenceRev
	v.goFunc(func(ctx context.Context) {
		if rev != 0 {
			c, cancel := v.opCtx(ctx)
			_, _ = v.st.Delete(c, store.Ephemeral, protocol.WorkerKey(v.id), store.Revision(rev))
			cancel()
		}
		v.send(reply, messages.WithdrawPresenceReply{})
	})
}

func (l *lease) schedule(c *actor.Context) {
	l.round++
	d := heartbeatInterval(l.v.cfg.LeaseDuration, l.v.id, l.v.nonce, l.round)
	l.hb = l.v.after(d, c.PID(), messages.HeartbeatDue{Round: l.round})
}

// beat is one heartbeat (§17.1).
func (l *lease) beat(c *actor.Context) {
	if l.v.halted.Load() {
		return // failed or aborted: no further writes, no more beats
	}
	l.schedule(c)
	if !l.departed && !l.presenceBusy {
		l.renewPresence(c)
	}
	p := l.v.pid
	tick := messages.HeartbeatTicked{Round: l.round}
	for _, pid := range []*actor.PID{p.leader, p.assign, p.revoke, p.commit} {
		c.Send(pid, tick)
	}
	now := l.v.clk.Now()
	for id, t := range l.held {
		if now.Sub(t.lastOK) >= l.v.cfg.LeaseDuration {
			l.log.Warn("lease not renewed for a full LeaseDuration; dropping split", "split", id)
			l.drop(c, id, t, messages.EndStarved)
			continue
		}
		if !t.inflight {
			l.renew(c, id, t)
		}
	}
}

func (l *lease) renewPresence(c *actor.Context) {
	l.presenceBusy = true
	v, pid, rev := l.v, c.PID(), l.presenceRev
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		key := protocol.WorkerKey(v.id)
		r, ok, err := v.st.Update(oc, store.Ephemeral, key, v.presenceValue(), store.Revision(rev))
		if err != nil || ok {
			v.send(pid, presenceRenewed{rev: uint64(r), err: err})
			return
		}
		e, ok, err := v.st.Get(oc, store.Ephemeral, key)
		if err != nil {
			v.send(pid, presenceRenewed{err: err})
			return
		}
		if !ok {
			if v.gone.Load() {
				v.send(pid, presenceRenewed{})
				return
			}
			r, _, err := v.st.Create(oc, store.Ephemeral, key, v.presenceValue())
			v.send(pid, presenceRenewed{rev: uint64(r), err: err})
			return
		}
		pr, err := protocol.DecodePresence(key, e.Value)
		if err == nil && pr.Nonce != v.nonce {
			err = coordination.Errorf(coordination.Fatal, "InstanceID %q is in use by another live worker (its nonce is on this worker's presence key); give every worker a unique InstanceID, such as its pod name", v.id)
			v.send(pid, presenceRenewed{err: err})
			return
		}
		v.send(pid, presenceRenewed{rev: uint64(e.Revision)})
	})
}

// renewOutcome classifies a lease renewal (§17.2).
type renewOutcome int

const (
	renewOK renewOutcome = iota + 1
	renewError
	renewFenced
	renewStarved
	renewTwin
)

func (l *lease) renew(c *actor.Context, id coordination.SplitID, t *leaseTenancy) {
	t.inflight = true
	v, pid, epoch, rev, prevTry := l.v, c.PID(), t.epoch, t.rev, t.lastTry
	at := v.clk.Now()
	t.lastTry = at
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		key := protocol.SplitKey(id)
		val := protocol.EncodeLease(protocol.LeaseRecord{Owner: v.id, Nonce: v.nonce, Epoch: epoch})
		res := leaseRenewed{split: id, epoch: epoch, at: at}
		r, ok, err := v.st.Update(oc, store.Ephemeral, key, val, store.Revision(rev))
		switch {
		case err != nil:
			res.outcome, res.err = renewError, err
		case ok:
			res.outcome, res.rev = renewOK, uint64(r)
		default:
			e, found, err := v.st.Get(oc, store.Ephemeral, key)
			var lr protocol.LeaseRecord
			if err == nil && found {
				lr, err = protocol.DecodeLease(key, e.Value)
			}
			res.outcome, res.err = judgeRenewal(v.id, v.nonce, epoch, found, lr, err)
			if res.outcome == renewOK {
				res.rev, res.at = uint64(e.Revision), prevTry
			}
		}
		v.send(pid, res)
	})
}

func (l *lease) renewed(c *actor.Context, m leaseRenewed) {
	t, ok := l.held[m.split]
	if !ok || t.epoch != m.epoch {
		return
	}
	t.inflight = false
	switch m.outcome {
	case renewOK:
		if m.rev > t.rev {
			t.rev = m.rev
		}
		if m.at.After(t.lastOK) {
			t.lastOK = m.at
		}
	case renewError:
		if !l.v.fatalIf(m.err) {
			l.log.Warn("lease renewal failed; will retry", "split", m.split, "error", m.err)
		}
	case renewTwin:
		l.v.failNow(twinError(l.v.id, m.split))
	case renewFenced:
		l.drop(c, m.split, t, messages.EndFenced)
	case renewStarved:
		l.drop(c, m.split, t, messages.EndStarved)
	}
}

func twinError(id string, split coordination.SplitID) error {
	return coordination.Errorf(coordination.Fatal, "InstanceID %q is in use by another live worker (its nonce is on this worker's lease for split %s); give every worker a unique InstanceID, such as its pod name", id, split)
}

// observed applies a lease put to a held split (§17.3).
func (l *lease) observed(c *actor.Context, m messages.LeaseObserved) {
	t, ok := l.held[m.Split]
	if !ok {
		return
	}
	switch {
	case m.Lease.Owner == l.v.id && m.Lease.Nonce == l.v.nonce:
		if m.Lease.Epoch == t.epoch && m.Rev > t.rev {
			t.rev = m.Rev
		}
	case m.Lease.Owner == l.v.id:
		l.v.failNow(twinError(l.v.id, m.Split))
	default:
		l.drop(c, m.Split, t, messages.EndFenced)
	}
}

// drop ends a held split involuntarily; the root emits Lost.
func (l *lease) drop(c *actor.Context, id coordination.SplitID, t *leaseTenancy, reason messages.EndReason) {
	delete(l.held, id)
	c.Send(l.v.pid.root, messages.TenancyEnded{Split: id, Epoch: t.epoch, Reason: reason})
}

// deleteLease deletes a surrendered split's lease guarded by rev. When the
// guard loses because a renewal in flight landed meanwhile, and the lease
// still carries this worker's nonce at epoch (non-zero), it retries once at
// the fresh revision, so a peer never waits out the lease.
func (l *lease) deleteLease(id coordination.SplitID, rev, epoch uint64) {
	if rev == 0 {
		return
	}
	l.deletes++
	v, pid := l.v, l.v.pid.lease
	v.goFunc(func(ctx context.Context) {
		defer v.send(pid, leaseDeleted{})
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		key := protocol.SplitKey(id)
		ok, err := v.st.Delete(oc, store.Ephemeral, key, store.Revision(rev))
		if ok || err != nil || epoch == 0 {
			return
		}
		e, found, err := v.st.Get(oc, store.Ephemeral, key)
		if err != nil || !found {
			return
		}
		if lr, err := protocol.DecodeLease(key, e.Value); err == nil && lr.Owner == v.id && lr.Nonce == v.nonce && lr.Epoch == epoch {
			_, _ = v.st.Delete(oc, store.Ephemeral, key, e.Revision)
		}
	})
}

// claim runs steps 1 and 2 of §16.4 in the background: the Expired
// downgrade read and the lease write.
func (l *lease) claim(c *actor.Context, m messages.ClaimSplit) {
	v, pid := l.v, c.PID()
	v.goFunc(func(ctx context.Context) {
		oc, cancel := v.opCtx(ctx)
		defer cancel()
		key := protocol.SplitKey(m.Candidate.ID)
		if m.Candidate.Kind == protocol.KindExpired {
			if e, ok, err := v.st.Get(oc, store.Durable, key); err == nil && ok {
				if rec, err := protocol.DecodeProgress(key, e.Value, v.fp.Load()); err == nil && rec.Owner == "" && uint64(e.Revision) >= m.RecordRev {
					if m.Candidate.Quarantine {
						v.send(pid, claimLeased{claim: m})
						return
					}
					m.Candidate.Kind = protocol.KindReleased
				}
			}
		}
		epoch := m.Record.Epoch + 1
		val := protocol.EncodeLease(protocol.LeaseRecord{Owner: v.id, Nonce: v.nonce, Epoch: epoch})
		at := v.clk.Now()
		var r store.Revision
		var ok bool
		var err error
		if m.Candidate.OwnLease {
			r, ok, err = v.st.Update(oc, store.Ephemeral, key, val, store.Revision(m.LeaseRev))
		} else {
			r, ok, err = v.st.Create(oc, store.Ephemeral, key, val)
		}
		if err != nil || !ok {
			v.fatalIf(err)
			r = 0
		}
		v.send(pid, claimLeased{claim: m, epoch: epoch, rev: uint64(r), at: at})
	})
}
