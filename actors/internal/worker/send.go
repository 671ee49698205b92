package worker

import (
	"github.com/anthdm/hollywood/actor"
)

// How the parts of one worker reach one another (docs/architecture.md,
// "Routing"). There is no routing table: each actor names, where it sends a
// message, the actors it tells, by the PIDs Spawn gave it (PIDs); each
// actor's Receive names, beside each message, who sends it. A send to an
// actor a test did not spawn (a nil PID) is dropped, never a panic.

// Tell sends msg to each actor of to, in that order. Like every send, one
// made after the worker shut down is dropped (Send).
func (v *Env) Tell(msg any, to ...*actor.PID) {
	for _, pid := range to {
		v.Send(pid, msg)
	}
}

// PostCommit queues msg (CellChanged, CutAsked) on the commit
// writer's shard of the split it concerns, behind what was posted there
// before; nothing is posted after the worker shut down, nor to a commit
// writer a test did not give (nil Commits), as to a nil PID.
func (v *Env) PostCommit(msg any) {
	if v.Ctx.Err() != nil || v.Commits == nil {
		return
	}
	v.Commits.Post(msg)
}

// Reply answers a request: to is its requester, a handle request's sender
// or a message's ReplyTo. Like every send, one made after the worker shut
// down is dropped (Send).
func (v *Env) Reply(to *actor.PID, msg any) { v.Send(to, msg) }
