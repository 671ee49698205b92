package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/messages"
)

// rootActor is the coordinator actor: the only writer of seam events into
// the outbox, where it enforces the event ordering rules (and copies each
// event to the user's actors that subscribed, subscribe.go). The held
// tenancies are the split writer's (actors/splitwriter/tenancy.go): it
// raises the seam events of each start (Gained) and involuntary end (Lost),
// the revocation requests of held tenancies (RevokeRequested), the
// quarantines and the verdict in the order it applied them
// (EventsRaised), so the root keeps no copy of them. It sends the
// handle's and a user's actor's commands on to the actor that acts on them
// (Fail, Release, Depart and Subscribe to the split writer, which answers
// the original requester; DeclineRevoke to revoke; commits go to the
// commit writer), and never does store I/O.
type rootActor struct {
	v   *worker.Env
	out *worker.Outbox // the driver's hand-off, given at spawn: the root is its one writer of events
	log *slog.Logger

	quarantined map[coordination.SplitID]bool // Quarantined emitted (E5)
	subs        subscribers                   // user's actors copied on every event (subscribe.go)
	verdict     bool
	departing   bool

	// Depart in progress.
	departReply   *actor.PID
	departErr     error
	departPending int
	departSplits  []coordination.SplitID // being handed back (EventsRaised.Departed)
	departHanded  bool                   // the hand-backs answered
	departTimer   *time.Timer
}

// departDeadline fires when Depart's own bound is about to pass.
type departDeadline struct{}

func newRoot(v *worker.Env, out *worker.Outbox) actor.Producer {
	return func() actor.Receiver {
		return &rootActor{
			v:           v,
			out:         out,
			log:         v.Log.With("actor", "coordinator"),
			quarantined: map[coordination.SplitID]bool{},
			subs:        newSubscribers(),
		}
	}
}

// Receive handles one message.
func (r *rootActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		if r.departTimer != nil {
			r.departTimer.Stop()
		}
	case messages.FailSplit: // from the handle, or a user's actor
		r.failSplit(c, m)
	case messages.ReleaseSplits: // from the handle, or a user's actor
		r.release(c, m)
	case messages.Subscribe: // from a user's actor
		r.subscribe(c, m)
	case messages.Unsubscribe: // from a user's actor
		r.unsubscribe(c, m)
	case messages.DeclineRevoke: // from a user's actor (Coordinator.PID)
		m.ReplyTo = replyTo(c, m.ReplyTo)
		r.v.Tell(m, r.v.PIDs.Revoke)
	case wire.EventsRaised: // from the split writer
		r.eventsRaised(m)
	case wire.BeginSubscription: // from the split writer (Subscribe)
		r.beginSubscription(m)
	case wire.HealthChanged: // from the split writer
		r.out.SetLive(m.Session, m.Watches)
	case wire.CutRequested: // from the commit writer
		r.cutRequested(m)
	case wire.DepartJob: // from the handle
		r.depart(c, m)
	case departDeadline:
		r.departTimedOut(c)
	case wire.DepartHandedBack: // from the split writer (Depart)
		r.departHandedBack(c, m)
	case wire.StepDownReply, wire.WithdrawPresenceReply: // from the leader, the lease (Depart)
		r.departStepped(c)
	default:
		r.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// eventsRaised queues the seam events the split writer raised, in its
// order, under the root's own rules of the event order (docs/protocol.md,
// "Events and their order": E5, E7; after the verdict only a Gained; once
// Depart began no RevokeRequested and no verdict), then answers a
// DeclineRevoke whose forced revocation ended a tenancy; Depart's own ends
// are the splits its answer waits for.
func (r *rootActor) eventsRaised(m wire.EventsRaised) {
	for _, ev := range m.Events {
		switch ev := ev.(type) {
		case coordination.Lost: // an involuntary end (E1, E3)
			if !r.verdict {
				r.emit(ev)
			}
		case coordination.RevokeRequested: // revoke's, of a held tenancy (E6)
			if !r.verdict && !r.departing {
				r.emit(ev)
			}
		case coordination.Quarantined:
			r.splitQuarantined(ev)
		case coordination.Stalled, coordination.AllComplete:
			r.verdictReached(ev)
		default: // Gained: the split writer opened its progress cell first
			r.emit(ev)
		}
	}
	r.departSplits = append(r.departSplits, m.Departed...)
	if m.Decline != nil {
		// A decline: the tenancy is surrendered (its Lost is in the
		// outbox); revoke settled the revocation as forced when it
		// forced it (docs/architecture.md, "Hops on the main paths").
		for _, ev := range m.Events {
			if l, ok := ev.(coordination.Lost); ok {
				r.v.Reply(m.Decline, messages.DeclineRevokeReply{Split: l.Split})
			}
		}
	}
}

// emit queues events for Poll and sends each subscriber a copy, in the
// same order. The root is the one emitter (docs/architecture.md): after a
// latched failure Poll hands out no further event, and nor does emit.
func (r *rootActor) emit(evs ...coordination.Event) {
	r.out.Push(evs...)
	if len(r.subs.active) == 0 || r.v.Failure() != nil {
		return
	}
	for _, ev := range evs {
		for _, pid := range r.subs.active {
			r.v.Reply(pid, ev)
		}
	}
}

// splitQuarantined emits Quarantined once per split (E5), unless the
// verdict came first.
func (r *rootActor) splitQuarantined(q coordination.Quarantined) {
	if !r.quarantined[q.Split] && !r.verdict {
		r.quarantined[q.Split] = true
		r.v.Metrics.Quarantined()
		r.emit(q)
	}
}

// verdictReached emits the job's verdict once, unless Depart began, and
// tells the leader to retire.
func (r *rootActor) verdictReached(verdict coordination.Event) {
	if r.verdict || r.departing {
		return
	}
	r.verdict = true
	r.emit(verdict)
	r.v.Tell(wire.Retire{}, r.v.PIDs.Leader)
}

// replyTo is where a command's reply goes: its ReplyTo, or else its
// sender (messages, "One reply per command").
func replyTo(c *actor.Context, pid *actor.PID) *actor.PID {
	if pid != nil {
		return pid
	}
	return c.Sender()
}

// failSplit sends a Fail on to the split writer, which answers it, unless
// the coordinator failed.
func (r *rootActor) failSplit(c *actor.Context, m messages.FailSplit) {
	m.ReplyTo = replyTo(c, m.ReplyTo)
	if err := r.v.Failure(); err != nil {
		r.v.Reply(m.ReplyTo, messages.FailSplitReply{Split: m.Split, Err: err})
		return
	}
	r.v.Tell(m, r.v.PIDs.SplitWriter)
}

// release sends a Release or ReleaseDrained on to the split writer, which
// answers it, unless the coordinator failed.
func (r *rootActor) release(c *actor.Context, m messages.ReleaseSplits) {
	m.ReplyTo = replyTo(c, m.ReplyTo)
	if err := r.v.Failure(); err != nil {
		r.v.Reply(m.ReplyTo, messages.ReleaseSplitsReply{Err: err})
		return
	}
	r.v.Tell(m, r.v.PIDs.SplitWriter)
}

// cutRequested emits the commit writer's cut request only when the driver
// holds the tenancy it names: Poll handed out that tenancy's Gained and no
// later one (the outbox's polled epoch, which the root reads as the
// outbox's owner). A request for a tenancy whose Gained is still unpolled
// is dropped; the leader asks again at its next CutInterval
// (docs/protocol.md, "Runtime split", "Who decides").
func (r *rootActor) cutRequested(m wire.CutRequested) {
	if r.out.PolledEpoch(m.Event.Split) != uint64(m.Event.Epoch) {
		return
	}
	r.emit(m.Event)
}
