package worker

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// Role names a part of one worker that sends or receives messages: the
// root, the six children, the commit writer (commitwriter.go; not an actor
// of the engine) and the handle (the caller's goroutine).
type Role uint8

const (
	RoleRoot Role = iota
	RoleWatch
	RoleLease
	RoleLeader
	RoleAssign
	RoleSplitWriter
	RoleRevoke
	RoleCommitWriter
	RoleHandle
)

var roleNames = [...]string{"root", "watch", "lease", "leader", "assign", "splitwriter", "revoke", "commitwriter", "handle"}

// String is the role's name as docs/architecture.md writes it.
func (r Role) String() string { return roleNames[r] }

// of returns the PID of actor role r (never roleCommitWriter nor
// roleHandle).
func (p PIDs) of(r Role) *actor.PID {
	return [...]*actor.PID{p.Root, p.Watch, p.Lease, p.Leader, p.Assign, p.SplitWriter, p.Revoke}[r]
}

// children are the root's children, in the order the root broadcasts to
// them. The lease actor comes last: it starts the startup I/O, so every
// other actor has JobStarted in its inbox before anything startup causes.
var children = []Role{RoleWatch, RoleLeader, RoleAssign, RoleSplitWriter, RoleRevoke, RoleLease}

// route is one row of the routing table: messages of these types, sent by
// from, go to every role in to, and to every role in own only when the
// message concerns this worker's own key (its presence or its assignment).
type route struct {
	Msgs []reflect.Type
	From Role
	To   []Role
	Own  []Role
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
	{Msgs: types(recordmsg.RecordsObserved{}, messages.RecordDeleted{}), From: RoleWatch, To: []Role{RoleSplitWriter, RoleLeader}, note: "split records; puts in runs of up to 256"},
	{Msgs: types(messages.PresenceObserved{}), From: RoleWatch, To: []Role{RoleLeader, RoleSplitWriter}, Own: []Role{RoleLease}, note: "the lease confirms its landed renewals"},
	{Msgs: types(messages.PresenceChallenged{}), From: RoleWatch, Own: []Role{RoleLease}, note: "a process starting with this InstanceID; the lease answers by renewing at once"},
	{Msgs: types(messages.PresenceDeleted{}), From: RoleWatch, To: []Role{RoleLeader, RoleSplitWriter}},
	{Msgs: types(recordmsg.LeaderObserved{}, messages.LeaderDeleted{}), From: RoleWatch, To: []Role{RoleLeader}},
	{Msgs: types(recordmsg.PlanObserved{}, messages.PlanDeleted{}), From: RoleWatch, To: []Role{RoleLeader, RoleSplitWriter}},
	{Msgs: types(recordmsg.AssignmentObserved{}, messages.AssignmentDeleted{}), From: RoleWatch, To: []Role{RoleLeader}, Own: []Role{RoleAssign}},
	{Msgs: types(messages.WatchesChanged{}), From: RoleWatch, To: []Role{RoleLeader, RoleSplitWriter, RoleRevoke, RoleLease}},
	{Msgs: types(messages.Reconciled{}), From: RoleWatch, To: []Role{RoleLeader}},
	// The session.
	{Msgs: types(messages.Joined{}), From: RoleLease, To: []Role{RoleWatch, RoleLeader, RoleSplitWriter}, note: "the watches open; the views are sized for the plan's splits"},
	{Msgs: types(messages.HeartbeatTicked{}), From: RoleLease, To: []Role{RoleLeader, RoleRevoke, RoleSplitWriter}},
	{Msgs: types(messages.SessionEnded{}), From: RoleLease, To: []Role{RoleRoot, RoleLeader, RoleSplitWriter}},
	{Msgs: types(messages.SessionStarted{}), From: RoleLease, To: []Role{RoleLeader, RoleSplitWriter}},
	// The job's lifecycle.
	{Msgs: types(messages.JobStarted{}, messages.Departing{}), From: RoleRoot, To: children},
	{Msgs: types(messages.VerdictReached{}), From: RoleSplitWriter, To: []Role{RoleRoot}, note: "the verdict, once"},
	{Msgs: types(messages.VerdictReached{}), From: RoleRoot, To: []Role{RoleLeader, RoleRevoke}},
	// Claims.
	{Msgs: types(recordmsg.ClaimWon{}), From: RoleSplitWriter, To: []Role{RoleRoot}},
	{Msgs: types(messages.SplitQuarantined{}), From: RoleSplitWriter, To: []Role{RoleRoot}},
	// Tenancies: the root's registry is their one owner.
	{Msgs: types(messages.EndTenancy{}), From: RoleSplitWriter, To: []Role{RoleRoot}, note: "a fence seen in the split record"},
	{Msgs: types(messages.EndTenancy{}), From: RoleCommitWriter, To: []Role{RoleRoot}, note: "a fenced or completed commit"},
	{Msgs: types(messages.TenancyStarted{}), From: RoleRoot, To: []Role{RoleSplitWriter, RoleRevoke, RoleLease}, note: "the registry's changes, each once; followers keep a derived view"},
	{Msgs: types(messages.TenancyEnded{}), From: RoleRoot, To: []Role{RoleSplitWriter, RoleRevoke, RoleCommitWriter, RoleLease}, note: "the commit writer closes the tenancy's progress cell; the lease drops its estimate"},
	{Msgs: types(OpenCell{}), From: RoleRoot, To: []Role{RoleCommitWriter}, note: "the progress record the claim's fence left, before Gained"},
	{Msgs: types(messages.HandBackResolved{}), From: RoleSplitWriter, To: []Role{RoleRoot}, note: "relayed by the root"},
	{Msgs: types(messages.HandBackResolved{}), From: RoleRoot, To: []Role{RoleRevoke}, note: "always after the tenancy's TenancyEnded: one ordered stream"},
	// Revocations.
	{Msgs: types(messages.AssignedSetChanged{}), From: RoleAssign, To: []Role{RoleRevoke, RoleSplitWriter}, note: "the diff, to revoke first: every tenancy the split writer starts from it reaches revoke after it"},
	{Msgs: types(messages.RevocationRequested{}, messages.ForceRevocation{}), From: RoleRevoke, To: []Role{RoleRoot}},
	// Commits.
	{Msgs: types(CommitRequest{}), From: RoleHandle, To: []Role{RoleCommitWriter}, note: "Commit, CommitFinal, CommitCut; answered by a CommitResult"},
	{Msgs: types(messages.CommitLanded{}), From: RoleCommitWriter, To: []Role{RoleRevoke}},
	// Runtime splits.
	{Msgs: types(RemainingReported{}), From: RoleHandle, To: []Role{RoleLease}, note: "ReportRemaining; the next presence renewal carries the largest"},
	{Msgs: types(CutAsked{}), From: RoleAssign, To: []Role{RoleCommitWriter}, note: "each cut request of this worker's assignment record; the commit writer gates it"},
	// Handle commands (requests: the reply goes to the caller).
	{Msgs: types(messages.StartJob{}, messages.FailSplit{}, messages.ReleaseSplits{}, messages.DepartJob{}), From: RoleHandle, To: []Role{RoleRoot}},
	{Msgs: types(messages.DeclineRevoke{}), From: RoleHandle, To: []Role{RoleRevoke}, note: "the revoke actor forces it through the root"},
	{Msgs: types(messages.DeclineRevoke{}), From: RoleRoot, To: []Role{RoleRevoke}, note: "a user's actor's, sent to Coordinator.PID"},
	{Msgs: types(messages.FailSplit{}, messages.HandBackSplits{}), From: RoleRoot, To: []Role{RoleSplitWriter}, note: "the writes of Fail, Release, Depart and forced revocations"},
	{Msgs: types(messages.StepDown{}), From: RoleRoot, To: []Role{RoleLeader}, note: "Depart; answered once the leader key is deleted"},
	{Msgs: types(messages.WithdrawPresence{}), From: RoleRoot, To: []Role{RoleLease}, note: "Depart; answered once the presence key is deleted"},
}

// routeKey finds a route: a message type from a sender.
type routeKey struct {
	from Role
	t    reflect.Type
}

var routeIndex = func() map[routeKey]*route {
	idx := map[routeKey]*route{}
	for i := range routes {
		r := &routes[i]
		for _, t := range r.Msgs {
			k := routeKey{r.From, t}
			if idx[k] != nil {
				panic(fmt.Sprintf("actors: two routes for %s from %s", t, r.From))
			}
			idx[k] = r
		}
	}
	return idx
}()

// lookup returns msg's route from sender from. A missing route is a bug of
// this package (every send is exercised by its tests): it panics, which
// the recover middleware turns into a Fatal failure.
func lookup(from Role, msg any) *route {
	r := routeIndex[routeKey{from, reflect.TypeOf(msg)}]
	if r == nil {
		panic(fmt.Sprintf("actors: no route for %T from %s", msg, from))
	}
	return r
}

// Route sends msg from role from to every subscriber its route names.
// An observation of the watch actor takes its credits of the watch
// hand-off once per recipient (backlog.go).
func (v *Env) Route(from Role, msg any) {
	to := recipients(from, msg, v.ID)
	if from == RoleWatch {
		v.Backlog.add(len(to) * credits(msg))
	}
	for _, r := range to {
		v.SendTo(r, msg)
	}
}

// SendTo delivers msg to role r: to the commit writer's shard that owns the
// split msg is about, or to r's actor.
func (v *Env) SendTo(r Role, msg any) {
	if r != RoleCommitWriter {
		v.Send(v.PIDs.of(r), msg)
		return
	}
	if v.Ctx.Err() != nil { // as Env.Send: nothing is delivered after shutdown
		return
	}
	v.Commits.Post(msg)
}

// AskCommit hands the handle's commit request to the commit writer, the
// destination its route names (checked once, in init), and waits for the
// result.
func (v *Env) AskCommit(req CommitRequest) CommitResult {
	return v.Commits.Ask(req)
}

// init checks the routing table for askCommit once, as the package loads.
func init() {
	if r := lookup(RoleHandle, CommitRequest{}); len(r.To) != 1 || r.To[0] != RoleCommitWriter {
		panic(fmt.Sprintf("actors: commit requests route to %s, but askCommit sends them to the commit writer", roleList(r.To)))
	}
}

// Reply answers a request: to is its requester, a handle request's sender
// or a message's ReplyTo. Replies are the one kind of send between parts
// of a worker that the routing table does not name; like every send, one
// made after the worker shut down is dropped (Env.Send).
func (v *Env) Reply(to *actor.PID, msg any) { v.Send(to, msg) }

// recipients returns the roles msg from from goes to on worker id: its
// route's subscribers, and the own-key subscribers when msg concerns id.
func recipients(from Role, msg any, id string) []Role {
	r := lookup(from, msg)
	if len(r.Own) == 0 || !concerns(msg, id) {
		return r.To
	}
	return append(append([]Role(nil), r.To...), r.Own...)
}

// RouteOf returns the one actor a request msg from from goes to.
func (v *Env) RouteOf(from Role, msg any) *actor.PID {
	r := lookup(from, msg)
	if len(r.To) != 1 {
		panic(fmt.Sprintf("actors: request %T from %s has %d destinations", msg, from, len(r.To)))
	}
	return v.PIDs.of(r.To[0])
}

// concerns reports whether msg is about this worker's (id's) own key.
func concerns(msg any, id string) bool {
	switch m := msg.(type) {
	case messages.PresenceObserved:
		return m.Instance == id
	case messages.PresenceChallenged:
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
		names := make([]string, len(r.Msgs))
		for i, t := range r.Msgs {
			names[i] = "`" + t.Name() + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", strings.Join(names, ", "), r.From, roleList(r.To), roleList(r.Own), r.note)
	}
	return b.String()
}

// roleList renders rs as a comma-separated list.
func roleList(rs []Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}
