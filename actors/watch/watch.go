package watch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
)

// Messages the watch actor sends itself from its goroutines.
type (
	watchOpened struct {
		ks  store.Keyspace
		gen uint64
		w   store.Watcher
		err error
	}
	// watchEvents is a burst of one watch's events, in order: what its
	// pump found waiting, at most maxWatchBurst.
	watchEvents struct {
		ks  store.Keyspace
		gen uint64
		evs []store.WatchEvent
	}
	watchEnded struct {
		ks  store.Keyspace
		gen uint64
		err error
	}
	rewatchDue struct {
		ks  store.Keyspace
		gen uint64
	}
	reconcileDue struct{}
	listed       struct {
		ks       store.Keyspace
		entries  []store.Entry
		err      error
		startSeq uint64
		last     bool
		took     time.Duration
	}
)

// Events is how many events the burst carries (eventBurst).
func (m watchEvents) Events() int { return len(m.evs) }

// MaxBurst bounds the events a pump hands the watch actor in one
// message, and the split record puts in one RecordsChanged, so one
// message's work stays small while a burst costs one message per
// subscriber rather than one per event.
const MaxBurst = 256

// keyState is the revision discipline of one key (docs/protocol.md, "Watches and reconcile").
type keyState struct {
	rev     uint64 // last applied put or delete revision
	present bool
	seq     uint64 // apply sequence number of the last change
	shown   uint64 // the watch generation of the last snapshot that showed the key
}

// keyspaceWatch is the state of the watch of one keyspace.
type keyspaceWatch struct {
	w        store.Watcher
	gen      uint64
	live     bool
	snapshot bool   // the snapshot of watch generation gen is being delivered
	openSeq  uint64 // w.seq when the watch being delivered was opened
	keys     map[string]*keyState
	outage   bool // the outage was logged; log re-established on the next snapshot
	backoff  time.Duration
	retry    *time.Timer
}

// watchActor bridges the store's two watches and the reconcile listing into
// typed observations for the actors that act on each key family.
//
// It takes the first session's start (the lease's SessionChanged): the
// watches open. It tells, each at the call
// that sends it, one message per key family carrying a put or a deletion
// (Deleted), as one watch event does: split records (RecordsChanged) to
// the split writer and the leader; presences (PresenceChanged) to the
// leader and the split writer, and a put of this worker's own to the lease
// too, and a challenge of this worker's own presence (PresenceChallenged)
// to the lease only; the leader key and the plan record (LeaderChanged,
// PlanChanged) to the leader, a put of the plan to the split writer too;
// assignment records (AssignmentChanged) to the leader, and this worker's
// own to the split writer too; WatchesChanged to the leader and the split
// writer (which tells the root what Healthy reports); Reconciled to the
// leader.
type watchActor struct {
	v   *worker.Env
	log *slog.Logger

	joined      bool
	fp          uint64
	fingerprint string
	ks          [2]*keyspaceWatch
	seq         uint64
	bothLive    bool
	everLive    bool
	announced   bool // "joined a running fleet" decided
	reconcile   *clock.Timer
	reconciling bool
	listStart   time.Time
	// live is the fleet's live members, the owner's (docs/architecture.md,
	// "One owner per fact"): each presence put or deletion changes it, and
	// the PresenceChanged that tells of the change carries a snapshot of it
	// (members), taken again only when a member joined, left, or changed its
	// session or budget.
	live    wire.LiveMembers
	members wire.Members
	// run is the split record puts applied and not yet routed; observe
	// sends it as one RecordsChanged before any other observation and at
	// the end of every message (flush).
	run []recordmsg.RecordChanged
}

// New returns the producer of worker v's watch actor.
func New(v *worker.Env) actor.Producer {
	return func() actor.Receiver {
		w := &watchActor{v: v, log: v.Log.With("actor", "watch"), live: wire.LiveMembers{}}
		for i := range w.ks {
			w.ks[i] = &keyspaceWatch{keys: map[string]*keyState{}, backoff: 200 * time.Millisecond}
		}
		return w
	}
}

// Receive handles one message; the observations it made leave before the
// next one is handled. A burst of watch events, the hot message, is handled
// apart from the rest: hollywood runs each burst of an idle actor's inbox on
// a fresh goroutine, whose stack grows (a copy) whenever the frames of the
// path exceed its initial size, so the event path keeps them small.
func (w *watchActor) Receive(c *actor.Context) {
	if m, ok := c.Message().(watchEvents); ok {
		w.events(m)
		w.flush()
		return
	}
	w.receive(c)
	w.flush()
}

// events applies a burst of one watch's events.
func (w *watchActor) events(m watchEvents) {
	for _, ev := range m.evs {
		if m.gen != w.ks[m.ks].gen || w.v.Halted() {
			break // a rollback ended the watch, or the worker failed
		}
		w.event(m.ks, ev)
	}
}

// receive handles every message but a burst of events.
func (w *watchActor) receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started:
	case actor.Stopped:
		for _, k := range w.ks {
			if k.w != nil {
				k.w.Stop()
			}
			if k.retry != nil {
				k.retry.Stop()
			}
		}
		worker.StopTimer(w.reconcile)
	case wire.SessionChanged: // from the lease: the first session's start
		if m.Live && !w.joined {
			w.joined = true
			w.fp, w.fingerprint = m.Job.FP, m.Job.Fingerprint
			k := w.ks[store.Durable]
			k.keys = worker.Sized(k.keys, worker.SizeHint(m.Planned))
			w.open(store.Durable)
			w.open(store.Ephemeral)
		}
	case watchOpened:
		k := w.ks[m.ks]
		if m.gen != k.gen {
			if m.w != nil {
				m.w.Stop()
			}
			return
		}
		if m.err != nil {
			w.broken(m.ks, m.err)
			return
		}
		k.w = m.w
	case watchEnded:
		if m.gen == w.ks[m.ks].gen {
			w.broken(m.ks, m.err)
		}
	case rewatchDue:
		if m.gen == w.ks[m.ks].gen {
			w.open(m.ks)
		}
	case reconcileDue:
		w.reconcile = w.v.After(w.v.Config.ReconcileInterval, c.PID(), reconcileDue{})
		w.startReconcile()
	case listed:
		w.applyListing(m)
	default:
		w.log.Warn("unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// open establishes the watch of ks in the background; the goroutine pumps
// its events into the actor until the watch ends, each burst it finds
// waiting (up to maxWatchBurst) as one message, one credit of the watch
// hand-off per event (worker/backlog.go): while the actors are behind it stops
// reading, and the store's own lag limit breaks the watch.
func (w *watchActor) open(ks store.Keyspace) {
	k := w.ks[ks]
	k.gen++
	gen, pid, v := k.gen, w.v.PIDs.Watch, w.v
	k.snapshot = true
	k.openSeq = w.seq
	v.Go(func(ctx context.Context) {
		sw, err := v.Store.Watch(ctx, ks, watchPrefix(ks))
		v.Send(pid, watchOpened{ks: ks, gen: gen, w: sw, err: err})
		if err != nil {
			return
		}
		for ev := range sw.Events() {
			evs, open := burst(sw.Events(), ev)
			if !v.Backlog.Take(ctx, len(evs)) {
				return
			}
			v.Send(pid, watchEvents{ks: ks, gen: gen, evs: evs})
			if !open {
				break
			}
		}
		v.Send(pid, watchEnded{ks: ks, gen: gen, err: sw.Err()})
	})
}

// burst returns first and the events already waiting on ch after it, up
// to maxWatchBurst in all, without waiting; open is false when ch was
// found closed.
func burst(ch <-chan store.WatchEvent, first store.WatchEvent) (evs []store.WatchEvent, open bool) {
	evs = []store.WatchEvent{first}
	for len(evs) < MaxBurst {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs, false
			}
			evs = append(evs, ev)
		default:
			return evs, true
		}
	}
	return evs, true
}

// watchPrefix is the prefix a worker watches and lists in ks
// (docs/protocol.md, "Keys"): the whole ephemeral keyspace, and the durable
// job family, never the progress records.
func watchPrefix(ks store.Keyspace) string {
	if ks == store.Durable {
		return protocol.PrefixJob
	}
	return ""
}

// broken handles a watch that ended or failed to open: re-watch with a
// real-time backoff, unless the error is Fatal.
func (w *watchActor) broken(ks store.Keyspace, err error) {
	k := w.ks[ks]
	k.w = nil
	k.live = false
	k.snapshot = false
	w.liveChanged()
	if w.v.FatalIf(err) || w.v.Ctx.Err() != nil {
		return
	}
	if !k.outage {
		k.outage = true
		w.log.Warn("watch broken; re-establishing it", "err", err)
	}
	k.gen++
	gen, pid, v, d := k.gen, w.v.PIDs.Watch, w.v, k.backoff
	k.backoff = min(2*k.backoff, 5*time.Second)
	k.retry = time.AfterFunc(d, func() { v.Send(pid, rewatchDue{ks: ks, gen: gen}) })
}

func (w *watchActor) event(ks store.Keyspace, ev store.WatchEvent) {
	k := w.ks[ks]
	switch ev.Kind {
	case store.Put:
		key, rev := ev.Entry.Key, uint64(ev.Entry.Revision)
		s := k.keys[key]
		if k.snapshot {
			if w.rolledBack(s, ks, key, rev, k.openSeq) {
				return
			}
			if s == nil {
				s = &keyState{}
				k.keys[key] = s
			}
			s.shown = k.gen
		}
		w.put(s, ks, key, ev.Entry.Value, rev)
	case store.Delete:
		w.del(ks, ev.Entry.Key, uint64(ev.Entry.Revision), false)
	case store.SnapshotDone:
		if !k.snapshot {
			return
		}
		for key, s := range k.keys {
			if s.present && s.shown != k.gen {
				w.del(ks, key, 0, true)
			}
		}
		k.snapshot = false
		k.live = true
		k.backoff = 200 * time.Millisecond
		if k.outage {
			k.outage = false
			w.log.Info("watch re-established")
		}
		if ks == store.Ephemeral && !w.announced {
			w.announced = true
			w.announce()
		}
		w.liveChanged()
	}
}

// announce logs `joined a running fleet` when the first ephemeral snapshot
// shows other workers' presence (docs/protocol.md, "Joining").
func (w *watchActor) announce() {
	live, peers := 0, 0
	for key, s := range w.ks[store.Ephemeral].keys {
		if kind, inst := protocol.ParseKey(store.Ephemeral, key); s.present && kind == protocol.KeyPresence {
			live++
			if inst != w.v.ID {
				peers++
			}
		}
	}
	if peers > 0 {
		w.log.Info("joined a running fleet", "live", live, "peers", peers)
	}
}

func (w *watchActor) liveChanged() {
	both := w.ks[0].live && w.ks[1].live
	if both == w.bothLive {
		return
	}
	w.bothLive = both
	p := w.v.PIDs
	w.observe(wire.WatchesChanged{Live: both}, p.Leader, p.SplitWriter)
	if both && !w.everLive {
		w.everLive = true
		w.reconcile = w.v.After(w.v.Config.ReconcileInterval, w.v.PIDs.Watch, reconcileDue{})
	}
}

func (w *watchActor) startReconcile() {
	if w.reconciling || !w.joined {
		return
	}
	w.reconciling = true
	w.listStart = time.Now()
	v, pid, seq := w.v, w.v.PIDs.Watch, w.seq
	v.Go(func(ctx context.Context) {
		for _, ks := range []store.Keyspace{store.Ephemeral, store.Durable} {
			start := time.Now()
			lctx, cancel := context.WithTimeout(ctx, v.Config.ReconcileInterval)
			es, err := v.Store.List(lctx, ks, watchPrefix(ks))
			cancel()
			v.Send(pid, listed{ks: ks, entries: es, err: err, startSeq: seq, last: ks == store.Durable, took: time.Since(start)})
			if err != nil {
				return
			}
		}
	})
}

// applyListing applies a listing like a snapshot (docs/protocol.md, "Watches and reconcile"): entries as puts,
// keys unchanged since the listing started and absent from it as deletes.
func (w *watchActor) applyListing(m listed) {
	if m.err != nil || m.last {
		w.reconciling = false
	}
	if m.err != nil {
		w.v.FatalIf(m.err)
		w.log.Warn("reconcile listing failed; skipping until the next tick", "err", m.err)
		return
	}
	seen := make(map[string]bool, len(m.entries))
	keys := w.ks[m.ks].keys
	for _, e := range m.entries {
		s := keys[e.Key]
		if w.rolledBack(s, m.ks, e.Key, uint64(e.Revision), m.startSeq) {
			return
		}
		seen[e.Key] = true
		w.put(s, m.ks, e.Key, e.Value, uint64(e.Revision))
	}
	for key, s := range w.ks[m.ks].keys {
		if s.present && !seen[key] && s.seq <= m.startSeq {
			w.del(m.ks, key, 0, true)
		}
	}
	if m.last {
		w.v.Metrics.Reconciled(time.Since(w.listStart))
		w.observe(wire.Reconciled{}, w.v.PIDs.Leader)
	}
}

// rolledBack latches a store rollback and reports true when a snapshot or
// listing that began after this worker applied key's last change (at apply
// sequence since or before) shows key below the revision of that change
// (docs/protocol.md, "Store rollback"). A live event below it is only a
// stale echo; a read that began earlier may legitimately be older. s is
// key's state (nil: none).
func (w *watchActor) rolledBack(s *keyState, ks store.Keyspace, key string, rev, since uint64) bool {
	if s == nil || s.seq > since || rev >= s.rev {
		return false
	}
	w.v.FailNow(worker.StoreRolledBack(w.v.Raw, ks, key, rev, s.rev))
	return true
}

// put applies a put of key above its last applied revision; s is key's
// state (nil: none yet).
func (w *watchActor) put(s *keyState, ks store.Keyspace, key string, val []byte, rev uint64) {
	if s != nil && rev <= s.rev {
		return
	}
	if s == nil {
		s = &keyState{}
		w.ks[ks].keys[key] = s
	}
	w.seq++
	s.rev, s.present, s.seq = rev, true, w.seq
	w.decodePut(ks, key, val, rev)
}

func (w *watchActor) del(ks store.Keyspace, key string, rev uint64, synth bool) {
	k := w.ks[ks]
	s := k.keys[key]
	if s == nil || !s.present || (!synth && rev <= s.rev) {
		return
	}
	w.seq++
	s.present, s.seq = false, w.seq
	if rev > s.rev {
		s.rev = rev
	}
	w.decodeDelete(ks, key, rev, synth)
}

// observe sends an observation other than a split record put to the
// actors to that act on it (each call names them): it sends the current run
// of split record puts (splitPut) first and then msg, so every actor sees
// the observations in the order they were made. It takes msg's credits of
// the watch hand-off once per recipient (worker/backlog.go).
func (w *watchActor) observe(msg any, to ...*actor.PID) {
	w.flush()
	w.tell(msg, to...)
}

// flush sends the current run of split record puts to the split-writer
// actor (its view of the split records) and the leader (its fleet view).
func (w *watchActor) flush() {
	if len(w.run) > 0 {
		w.tell(recordmsg.RecordsChanged{Records: w.run}, w.v.PIDs.SplitWriter, w.v.PIDs.Leader)
		w.run = nil
	}
}

// tell takes msg's credits for each recipient, then sends it to them.
func (w *watchActor) tell(msg any, to ...*actor.PID) {
	w.v.Backlog.Observe(msg, len(to))
	w.v.Tell(msg, to...)
}

// decodePut decodes a put and observes it. Split records, nearly every
// put, take a path of their own with small frames (see Receive).
func (w *watchActor) decodePut(ks store.Keyspace, key string, val []byte, rev uint64) {
	kind, suffix := protocol.ParseKey(ks, key)
	if kind == protocol.KeySplitRecord {
		w.splitPut(key, val, rev)
		return
	}
	w.otherPut(kind, suffix, key, val, rev)
}

// splitPut decodes a split record put and adds it to the run.
func (w *watchActor) splitPut(key string, val []byte, rev uint64) {
	rec, err := protocol.DecodeSplit(key, val, w.fp)
	if err != nil {
		w.v.FatalIf(err)
		return
	}
	w.run = append(w.run, recordmsg.RecordChanged{Split: rec.ID, Record: rec, Rev: rev})
	if len(w.run) == MaxBurst {
		w.flush()
	}
}

// otherPut decodes and observes a put of any key but a split record's.
func (w *watchActor) otherPut(kind protocol.KeyKind, suffix, key string, val []byte, rev uint64) {
	switch kind {
	case protocol.KeyPresence:
		pr, err := protocol.DecodePresence(key, val)
		if err != nil {
			w.log.Warn("unreadable presence value; using the default budget", "key", key, "err", err)
		}
		var remaining []wire.Estimate
		for _, e := range pr.Remaining {
			remaining = append(remaining, wire.Estimate{Split: e.Split, Epoch: e.Epoch, Remaining: e.Remaining})
		}
		m := wire.PresenceChanged{Instance: suffix, Nonce: pr.Nonce, MaxInFlight: pr.MaxInFlight, Rev: rev, Remaining: remaining}
		m.Live = w.presence(suffix, wire.Member{Nonce: pr.Nonce, MaxInFlight: pr.MaxInFlight}, true)
		if suffix == w.v.ID { // the lease confirms its landed renewals
			w.observe(m, w.v.PIDs.Leader, w.v.PIDs.SplitWriter, w.v.PIDs.Lease)
			return
		}
		w.observe(m, w.v.PIDs.Leader, w.v.PIDs.SplitWriter)
	case protocol.KeyLeaderValue:
		l, err := protocol.DecodeLeader(key, val)
		if err != nil {
			w.v.FatalIf(err)
			return
		}
		w.observe(recordmsg.LeaderChanged{Leader: l, Rev: rev}, w.v.PIDs.Leader)
	case protocol.KeyPlanRecord:
		pl, err := protocol.DecodePlan(key, val)
		if err != nil {
			w.v.FatalIf(err)
			return
		}
		if pl.Fingerprint != w.fingerprint {
			w.v.FatalIf(protocol.FingerprintMismatch(pl.Fingerprint, w.fingerprint))
			return
		}
		w.observe(recordmsg.PlanChanged{Plan: pl, Rev: rev}, w.v.PIDs.Leader, w.v.PIDs.SplitWriter)
	case protocol.KeyAssignment:
		a, err := protocol.DecodeAssignment(key, val)
		if err != nil {
			w.log.Warn("unreadable assignment; ignoring it", "key", key, "err", err)
			return
		}
		w.assignmentChanged(recordmsg.AssignmentChanged{Instance: suffix, Assignment: a, Rev: rev})
	case protocol.KeyProbe:
		w.log.Debug("probe key event", "key", key)
	case protocol.KeyChallenge:
		if suffix == w.v.ID { // a process starting with this InstanceID: the lease answers
			w.observe(wire.PresenceChallenged{Instance: suffix, Challenger: string(val), Rev: rev}, w.v.PIDs.Lease)
		}
	default:
		w.log.Debug("ignoring key of unknown shape", "key", key)
	}
}

// presence applies a put of member inst's presence (live) or its
// deletion to the live members, and returns their snapshot.
func (w *watchActor) presence(inst string, m wire.Member, live bool) wire.Members {
	old, was := w.live[inst]
	switch {
	case live && (!was || old != m):
		w.live[inst] = m
	case !live && was:
		delete(w.live, inst)
	default:
		return w.members // a renewal: nothing changed
	}
	w.members = wire.SnapshotMembers(w.members, w.live, inst)
	return w.members
}

// assignmentChanged observes a put or a deletion of an assignment record
// to the leader, and this worker's own to the split writer too, which
// diffs it.
func (w *watchActor) assignmentChanged(m recordmsg.AssignmentChanged) {
	if m.Instance == w.v.ID {
		w.observe(m, w.v.PIDs.Leader, w.v.PIDs.SplitWriter)
		return
	}
	w.observe(m, w.v.PIDs.Leader)
}

func (w *watchActor) decodeDelete(ks store.Keyspace, key string, rev uint64, synth bool) {
	kind, suffix := protocol.ParseKey(ks, key)
	switch kind {
	case protocol.KeySplitRecord:
		// A deletion, which only code outside the library makes, goes
		// alone, after the run of puts before it.
		d := []recordmsg.RecordChanged{{Split: coordination.SplitID(suffix), Rev: rev, Deleted: true}}
		w.observe(recordmsg.RecordsChanged{Records: d}, w.v.PIDs.SplitWriter, w.v.PIDs.Leader)
	case protocol.KeyPresence:
		live := w.presence(suffix, wire.Member{}, false)
		w.observe(wire.PresenceChanged{Instance: suffix, Rev: rev, Deleted: true, Live: live}, w.v.PIDs.Leader, w.v.PIDs.SplitWriter)
	case protocol.KeyLeaderValue:
		w.observe(recordmsg.LeaderChanged{Rev: rev, Deleted: true, Synthesized: synth}, w.v.PIDs.Leader)
	case protocol.KeyPlanRecord:
		w.log.Error("plan record deleted outside the library", "key", key)
		w.observe(recordmsg.PlanChanged{Rev: rev, Deleted: true}, w.v.PIDs.Leader)
	case protocol.KeyAssignment:
		w.assignmentChanged(recordmsg.AssignmentChanged{Instance: suffix, Rev: rev, Deleted: true})
	case protocol.KeyProbe:
		w.log.Debug("probe key event", "key", key)
	case protocol.KeyChallenge:
		w.log.Debug("challenge key deleted", "key", key)
	}
}
