package actors

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// role names a part of one worker that sends or receives messages: the
// root, the six children, the commit writer (commitwriter.go; not an actor
// of the engine) and the handle (the caller's goroutine).
type role uint8

const (
	roleRoot role = iota
	roleWatch
	roleLease
	roleLeader
	roleAssign
	roleSplitWriter
	roleRevoke
	roleCommitWriter
	roleHandle
)

var roleNames = [...]string{"root", "watch", "lease", "leader", "assign", "splitwriter", "revoke", "commitwriter", "handle"}

func (r role) String() string { return roleNames[r] }

// of returns the PID of actor role r (never roleCommitWriter nor
// roleHandle).
func (p pids) of(r role) *actor.PID {
	return [...]*actor.PID{p.root, p.watch, p.lease, p.leader, p.assign, p.splitWriter, p.revoke}[r]
}

// children are the root's children, in the order the root broadcasts to
// them. The lease actor comes last: it starts the startup I/O, so every
// other actor has JobStarted in its inbox before anything startup causes.
var children = []role{roleWatch, roleLeader, roleAssign, roleSplitWriter, roleRevoke, roleLease}

// route is one row of the routing table: messages of these types, sent by
// from, go to every role in to, and to every role in own only when the
// message concerns this worker's own key (its presence or its assignment).
type route struct {
	msgs []reflect.Type
	from role
	to   []role
	own  []role
	note string // for docs/architecture.md; not used to route
}

func types(msgs ...any) []reflect.Type {
	ts := make([]reflect.Type, len(msgs))
	for i, m := range msgs {
		ts[i] = reflect.TypeOf(m)
	}
	return ts
}

// routes is the one declared routing table: who sends which observation,
// tenancy message, intent and command to whom. Every send between parts of
// a worker that is not a reply (to a ReplyTo or a request) nor a message an
// actor sends itself goes through it (route, routeOf);
// docs/architecture.md's routing table is rendered from it
// (routing_test.go checks that they match).
var routes = []route{
	// Observations: the watch actor bridges watched and listed keys.
	{msgs: types(recordmsg.RecordsObserved{}, messages.RecordDeleted{}), from: roleWatch, to: []role{roleSplitWriter, roleAssign, roleLeader}, note: "split records; puts in runs of up to 256"},
	{msgs: types(messages.PresenceObserved{}), from: roleWatch, to: []role{roleLeader, roleAssign}, own: []role{roleLease}, note: "the lease confirms its landed renewals"},
	{msgs: types(messages.PresenceDeleted{}), from: roleWatch, to: []role{roleLeader, roleAssign}},
	{msgs: types(recordmsg.LeaderObserved{}, messages.LeaderDeleted{}), from: roleWatch, to: []role{roleLeader}},
	{msgs: types(recordmsg.PlanObserved{}, messages.PlanDeleted{}), from: roleWatch, to: []role{roleLeader, roleSplitWriter}},
	{msgs: types(recordmsg.AssignmentObserved{}, messages.AssignmentDeleted{}), from: roleWatch, to: []role{roleLeader}, own: []role{roleAssign}},
	{msgs: types(messages.WatchesChanged{}), from: roleWatch, to: []role{roleLeader, roleAssign, roleSplitWriter, roleRevoke, roleLease}},
	{msgs: types(messages.Reconciled{}), from: roleWatch, to: []role{roleLeader}},
	// The session.
	{msgs: types(messages.Joined{}), from: roleLease, to: []role{roleWatch}, note: "the watches open"},
	{msgs: types(messages.HeartbeatTicked{}), from: roleLease, to: []role{roleLeader, roleAssign, roleRevoke, roleSplitWriter}},
	{msgs: types(messages.SessionEnded{}), from: roleLease, to: []role{roleRoot, roleLeader, roleAssign}},
	{msgs: types(messages.SessionStarted{}), from: roleLease, to: []role{roleLeader, roleAssign}},
	// The job's lifecycle.
	{msgs: types(messages.JobStarted{}, messages.Departing{}), from: roleRoot, to: children},
	{msgs: types(messages.VerdictReached{}), from: roleSplitWriter, to: []role{roleRoot}, note: "the verdict, once"},
	{msgs: types(messages.VerdictReached{}), from: roleRoot, to: []role{roleAssign, roleLeader, roleRevoke}},
	// Claims.
	{msgs: types(recordmsg.ClaimSplit{}, recordmsg.ReturnLeftover{}), from: roleAssign, to: []role{roleSplitWriter}},
	{msgs: types(recordmsg.ClaimWon{}), from: roleSplitWriter, to: []role{roleRoot}},
	{msgs: types(messages.ClaimAbandoned{}), from: roleSplitWriter, to: []role{roleAssign}},
	{msgs: types(messages.SplitQuarantined{}), from: roleSplitWriter, to: []role{roleRoot}},
	// Tenancies: the root's registry is their one owner.
	{msgs: types(messages.EndTenancy{}), from: roleSplitWriter, to: []role{roleRoot}, note: "a fence seen in the split record"},
	{msgs: types(messages.EndTenancy{}), from: roleCommitWriter, to: []role{roleRoot}, note: "a fenced or completed commit"},
	{msgs: types(messages.TenancyStarted{}), from: roleRoot, to: []role{roleAssign, roleSplitWriter, roleRevoke}, note: "the registry's changes, each once; followers keep a derived view"},
	{msgs: types(messages.TenancyEnded{}), from: roleRoot, to: []role{roleAssign, roleSplitWriter, roleRevoke, roleCommitWriter}, note: "the commit writer closes the tenancy's progress cell"},
	{msgs: types(openCell{}), from: roleRoot, to: []role{roleCommitWriter}, note: "the progress record the claim's fence left, before Gained"},
	{msgs: types(messages.HandBackResolved{}), from: roleSplitWriter, to: []role{roleRoot}, note: "relayed by the root"},
	{msgs: types(messages.HandBackResolved{}), from: roleRoot, to: []role{roleRevoke, roleAssign}, note: "always after the tenancy's TenancyEnded: one ordered stream"},
	// Revocations.
	{msgs: types(messages.AssignedSetChanged{}), from: roleAssign, to: []role{roleRevoke}},
	{msgs: types(messages.RevocationRequested{}, messages.ForceRevocation{}), from: roleRevoke, to: []role{roleRoot}},
	// Commits.
	{msgs: types(commitRequest{}), from: roleHandle, to: []role{roleCommitWriter}, note: "Commit, CommitFinal; answered by a commitResult"},
	{msgs: types(messages.CommitLanded{}), from: roleCommitWriter, to: []role{roleRevoke}},
	// Handle commands (requests: the reply goes to the caller).
	{msgs: types(messages.StartJob{}, messages.FailSplit{}, messages.ReleaseSplits{}, messages.DepartJob{}), from: roleHandle, to: []role{roleRoot}},
	{msgs: types(messages.DeclineRevoke{}), from: roleHandle, to: []role{roleRevoke}, note: "the revoke actor forces it through the root"},
	{msgs: types(messages.DeclineRevoke{}), from: roleRoot, to: []role{roleRevoke}, note: "a user's actor's, sent to Coordinator.PID"},
	{msgs: types(messages.FailSplit{}, messages.HandBackSplits{}), from: roleRoot, to: []role{roleSplitWriter}, note: "the writes of Fail, Release, Depart and forced revocations"},
	{msgs: types(messages.StepDown{}), from: roleRoot, to: []role{roleLeader}, note: "Depart; answered once the leader key is deleted"},
	{msgs: types(messages.WithdrawPresence{}), from: roleRoot, to: []role{roleLease}, note: "Depart; answered once the presence key is deleted"},
}

// routeKey finds a route: a message type from a sender.
type routeKey struct {
	from role
	t    reflect.Type
}

var routeIndex = func() map[routeKey]*route {
	idx := map[routeKey]*route{}
	for i := range routes {
		r := &routes[i]
		for _, t := range r.msgs {
			k := routeKey{r.from, t}
			if idx[k] != nil {
				panic(fmt.Sprintf("actors: two routes for %s from %s", t, r.from))
			}
			idx[k] = r
		}
	}
	return idx
}()

// lookup returns msg's route from sender from. A missing route is a bug of
// this package (every send is exercised by its tests): it panics, which
// the recover middleware turns into a Fatal failure.
func lookup(from role, msg any) *route {
	r := routeIndex[routeKey{from, reflect.TypeOf(msg)}]
	if r == nil {
		panic(fmt.Sprintf("actors: no route for %T from %s", msg, from))
	}
	return r
}

// route sends msg from role from to every subscriber its route names.
// An observation of the watch actor takes its credits of the watch
// hand-off once per recipient (backlog.go).
func (v *env) route(from role, msg any) {
	to := recipients(from, msg, v.id)
	if from == roleWatch {
		v.backlog.add(len(to) * credits(msg))
	}
	for _, r := range to {
		v.sendTo(r, msg)
	}
}

// sendTo delivers msg to role r: to the commit writer's shard that owns the
// split msg is about, or to r's actor.
func (v *env) sendTo(r role, msg any) {
	if r != roleCommitWriter {
		v.send(v.pid.of(r), msg)
		return
	}
	if v.ctx.Err() != nil { // as env.send: nothing is delivered after shutdown
		return
	}
	v.commits.Post(msg)
}

// askCommit hands the handle's commit request to the commit writer, the
// destination its route names (checked once, in init), and waits for the
// result.
func (v *env) askCommit(req commitRequest) commitResult {
	return v.commits.Ask(req)
}

// init checks the routing table for askCommit once, as the package loads.
func init() {
	if r := lookup(roleHandle, commitRequest{}); len(r.to) != 1 || r.to[0] != roleCommitWriter {
		panic(fmt.Sprintf("actors: commit requests route to %s, but askCommit sends them to the commit writer", roleList(r.to)))
	}
}

// reply answers a request: to is its requester, a handle request's sender
// or a message's ReplyTo. Replies are the one kind of send between parts
// of a worker that the routing table does not name; like every send, one
// made after the worker shut down is dropped (env.send).
func (v *env) reply(to *actor.PID, msg any) { v.send(to, msg) }

// recipients returns the roles msg from from goes to on worker id: its
// route's subscribers, and the own-key subscribers when msg concerns id.
func recipients(from role, msg any, id string) []role {
	r := lookup(from, msg)
	if len(r.own) == 0 || !concerns(msg, id) {
		return r.to
	}
	return append(append([]role(nil), r.to...), r.own...)
}

// routeOf returns the one actor a request msg from from goes to.
func (v *env) routeOf(from role, msg any) *actor.PID {
	r := lookup(from, msg)
	if len(r.to) != 1 {
		panic(fmt.Sprintf("actors: request %T from %s has %d destinations", msg, from, len(r.to)))
	}
	return v.pid.of(r.to[0])
}

// concerns reports whether msg is about this worker's (id's) own key.
func concerns(msg any, id string) bool {
	switch m := msg.(type) {
	case messages.PresenceObserved:
		return m.Instance == id
	case recordmsg.AssignmentObserved:
		return m.Instance == id
	case messages.AssignmentDeleted:
		return m.Instance == id
	}
	return false
}

// routingTable renders routes as the Markdown table of docs/architecture.md.
func routingTable() string {
	var b strings.Builder
	b.WriteString("| message | from | to | to, for this worker's own key only | note |\n|---|---|---|---|---|\n")
	for _, r := range routes {
		names := make([]string, len(r.msgs))
		for i, t := range r.msgs {
			names[i] = "`" + t.Name() + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Join(names, ", "), r.from, roleList(r.to), roleList(r.own), r.note)
	}
	return b.String()
}

func roleList(rs []role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}
