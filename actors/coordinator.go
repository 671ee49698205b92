package actors

import (
	"context"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/commitwriter"
	"github.com/spate-go/coordination/actors/internal/wire"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
)

// stopGrace is how long a call waits for its real outcome after the stop
// channel closed.
const stopGrace = 50 * time.Millisecond

// Coordinator is one worker's handle; it implements
// [coordination.Coordinator]. Create it with [Spawn]. It is safe for
// concurrent use, although a driver calls it from one goroutine. Poll,
// SetWaker and SetStop never block; every other call is bounded in real time
// even when the store stops answering.
//
// A call naming a split refers to the tenancy whose Gained Poll last
// returned for it. When the worker re-claimed the split and the new Gained
// is still unpolled, Commit, CommitFinal entries, Release, ReleaseDrained and
// DeclineRevoke treat the split as not held (Commit returns Fenced and writes
// nothing), so a lane of an ended tenancy can never write onto the next one.
// Depart hands back every owned split, polled or not.
type Coordinator struct {
	v       *worker.Env
	out     *worker.Outbox       // the driver's hand-off, given at spawn: the root writes the events, Poll takes them
	commits commitwriter.Writers // the commit writer, which the handle asks each commit (handle_commit.go)

	mu       sync.Mutex
	stop     <-chan struct{}
	stopCtx  context.Context // ends stopGrace after stop closes; nil without a stop
	started  bool
	fp       uint64 // H(the job's fingerprint), set by Start
	departed bool
	aborted  bool
	shutOnce sync.Once
}

var _ coordination.Coordinator = (*Coordinator)(nil)

// InstanceID returns the resolved instance id: Config.InstanceID, or the
// generated "spate-" + 32 hex characters.
func (c *Coordinator) InstanceID() string { return c.v.ID }

// PID returns the coordinator actor's PID, for a user's own actor on the
// same engine: it may send messages.FailSplit, ReleaseSplits and
// DeclineRevoke with its context's Send, and receives exactly one
// FailSplitReply, ReleaseSplitsReply or DeclineRevokeReply, at the
// command's ReplyTo or else at itself (package messages). Each names the
// tenancy by the epoch of its Gained.
func (c *Coordinator) PID() *actor.PID { return c.v.PIDs.Root }

// ended returns the error every call but Poll returns after Abort or
// Depart, or nil. c.mu must be held.
func (c *Coordinator) ended() error {
	switch {
	case c.aborted:
		return worker.ErrAborted
	case c.departed:
		return worker.ErrDeparted
	}
	return nil
}

// gate returns the misuse error of a write call, or nil.
func (c *Coordinator) gate() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ended(); err != nil {
		return err
	}
	if !c.started {
		return worker.ErrBeforeStart
	}
	return c.v.Failure()
}

// SetWaker installs the Waker signalled after events are enqueued or a
// failure is latched. Call it before Start; later calls are ignored with a
// warning, and calls after Depart or Abort do nothing.
func (c *Coordinator) SetWaker(w *coordination.Waker) {
	c.mu.Lock()
	gone := c.departed || c.aborted
	c.mu.Unlock()
	if gone {
		return
	}
	if !c.out.SetWaker(w) {
		c.v.Log.Warn("SetWaker after Start is ignored")
	}
}

// SetStop installs the run's stop channel (nil removes it). While it is
// closed, Commit, Fail, Release, ReleaseDrained and DeclineRevoke stop
// waiting within 100ms and return Retryable; the operation may still land.
func (c *Coordinator) SetStop(stop <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.departed || c.aborted {
		return
	}
	c.stop, c.stopCtx = stop, nil
	if stop == nil {
		return
	}
	ctx, cancel := context.WithCancel(c.v.Ctx)
	c.stopCtx = ctx
	c.v.WG.Go(func() {
		defer cancel()
		select {
		case <-stop:
		case <-ctx.Done():
			return
		}
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	})
}

// Start joins the job with planner p. It does no I/O and returns at once;
// startup runs in the background and its failures surface through Poll.
// Fatal when called twice, with a nil planner, with an empty fingerprint, or
// after Depart or Abort.
func (c *Coordinator) Start(p coordination.Planner) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ended(); err != nil {
		return err
	}
	switch {
	case c.started:
		return &coordination.Error{Kind: coordination.Fatal, Reason: "Start called twice"}
	case p == nil:
		return &coordination.Error{Kind: coordination.Fatal, Reason: "Start needs a planner"}
	}
	fp := p.Fingerprint()
	if fp == "" {
		return &coordination.Error{Kind: coordination.Fatal, Reason: "the planner fingerprint must not be empty"}
	}
	c.started = true
	c.out.Start()
	c.fp = protocol.Fingerprint(fp)
	// The lease joins the job and tells the others the job with the
	// session's start (SessionChanged).
	msg := wire.StartJob{Job: wire.Job{Planner: p, Fingerprint: fp, FP: c.fp}}
	c.v.Send(c.v.PIDs.Lease, msg)
	return nil
}

// Poll returns the events enqueued since the previous call, in decision
// order, or the latched failure once earlier events are drained. It never
// blocks. Fatal before Start and after Abort; (nil, nil) after Depart.
func (c *Coordinator) Poll() ([]coordination.Event, error) {
	c.mu.Lock()
	aborted, started, departed := c.aborted, c.started, c.departed
	c.mu.Unlock()
	switch {
	case aborted:
		return nil, worker.ErrAborted
	case departed:
		return nil, nil
	case !started:
		return nil, &coordination.Error{Kind: coordination.Fatal, Reason: "Poll called before Start"}
	}
	return c.out.Take()
}

// call sends msg to actor to (the root, or revoke for DeclineRevoke) and
// waits for the reply, at most bound (real time); with honourStop it also
// returns shortly after the stop channel closes.
func (c *Coordinator) call(op string, to *actor.PID, msg any, bound time.Duration, honourStop bool) (any, error) {
	var stop <-chan struct{}
	if honourStop {
		c.mu.Lock()
		stop = c.stop
		c.mu.Unlock()
	}
	resp := c.v.Engine.Request(to, msg, bound)
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1) // capacity 1: the goroutine never blocks
	c.v.WG.Go(func() {
		v, err := resp.Result()
		done <- result{v, err}
	})
	var grace <-chan time.Time
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, worker.NoAnswer(bound)
			}
			return r.v, nil
		case <-stop:
			stop = nil
			t := time.NewTimer(stopGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return nil, worker.StoppedBeforeDone(op)
		}
	}
}

func (c *Coordinator) callBound() time.Duration { return 3*c.v.Config.OpTimeout + 100*time.Millisecond }

// Fail reports a held split as unprocessable by the tenancy of epoch
// (docs/protocol.md, "Hand-back, fail, quarantine"): nil (landed), Fenced
// (not held, stale epoch, or a peer owns it) or Retryable (the write did
// not confirm; one attempt is charged either way).
func (c *Coordinator) Fail(split coordination.SplitID, epoch coordination.LeaseEpoch, reason string) error {
	if err := c.gate(); err != nil {
		return err
	}
	r, err := c.call("fail", c.v.PIDs.Root, messages.FailSplit{Split: split, Epoch: epoch, Reason: reason}, c.callBound(), true)
	if err != nil {
		return err
	}
	return r.(messages.FailSplitReply).Err
}

// Release hands back held splits without charging an attempt. Names
// not held are ignored. Retryable names the splits whose hand-back did not
// confirm.
func (c *Coordinator) Release(splits ...coordination.SplitID) error {
	return c.release("release", splits, false)
}

// ReleaseDrained hands back splits drained after RevokeRequested.
func (c *Coordinator) ReleaseDrained(splits ...coordination.SplitID) error {
	return c.release("release drained", splits, true)
}

func (c *Coordinator) release(op string, splits []coordination.SplitID, drained bool) error {
	if err := c.gate(); err != nil {
		return err
	}
	ts := make([]messages.Tenancy, len(splits))
	for i, id := range splits {
		ts[i] = messages.Tenancy{Split: id, Epoch: coordination.LeaseEpoch(c.out.PolledEpoch(id))}
	}
	r, err := c.call(op, c.v.PIDs.Root, messages.ReleaseSplits{Tenancies: ts, Drained: drained}, c.callBound(), true)
	if err != nil {
		return err
	}
	return r.(messages.ReleaseSplitsReply).Err
}

// DeclineRevoke refuses a revocation the caller cannot drain. It returns
// once the tenancy is surrendered (its Lost is queued); the hand-back is
// written after, as for any forced revocation (docs/architecture.md, "Hops").
func (c *Coordinator) DeclineRevoke(split coordination.SplitID) error {
	if err := c.gate(); err != nil {
		return err
	}
	r, err := c.call("decline revoke", c.v.PIDs.Revoke, messages.DeclineRevoke{Split: split, Epoch: coordination.LeaseEpoch(c.out.PolledEpoch(split))}, c.callBound(), true)
	if err != nil {
		return err
	}
	return r.(messages.DeclineRevokeReply).Err
}

// Depart leaves the job for good (docs/protocol.md, "Departure"): it hands back every owned
// split, demotes, deletes the presence key and stops all background work,
// within 2 x OpTimeout + 100ms; it ignores the stop. It must be the last call.
func (c *Coordinator) Depart(held ...coordination.SplitID) error {
	c.mu.Lock()
	if err := c.ended(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.departed = true
	started := c.started
	c.mu.Unlock()
	if !started {
		c.shutdown()
		return nil
	}
	bound := 2*c.v.Config.OpTimeout + 100*time.Millisecond
	deadline := time.Now().Add(bound)
	r, err := c.call("depart", c.v.PIDs.Root, wire.DepartJob{Held: append([]coordination.SplitID(nil), held...)}, bound, false)
	if err == nil {
		rep := r.(wire.DepartJobReply)
		if rep.Failed {
			c.directHandBack(rep.Held, rep.Session, deadline)
		}
		err = rep.Err
	}
	c.shutdown()
	return err
}

// directHandBack is Depart's best-effort hand-back after a failure (docs/protocol.md, "Departure"),
// straight on the store, ignoring errors.
func (c *Coordinator) directHandBack(held []wire.HeldSplit, nonce string, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	st, v := c.v.Raw, c.v
	c.mu.Lock()
	fp := c.fp
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range held {
		wg.Go(func() {
			key := protocol.SplitKey(h.Split)
			e, ok, err := st.Get(ctx, store.Durable, key)
			if err != nil || !ok {
				return
			}
			rec, err := protocol.DecodeSplit(key, e.Value, fp)
			if err != nil {
				return
			}
			if worker.JudgeSurrender(rec, v.ID, h.Epoch) == worker.SurrenderWrite && rec.Nonce == nonce {
				_, _, _ = st.Update(ctx, store.Durable, key, protocol.EncodeSplit(rec.HandBack(v.NowMs())), e.Revision)
			}
		})
	}
	wg.Wait()
	if e, ok, err := st.Get(ctx, store.Ephemeral, protocol.KeyLeader); err == nil && ok {
		if l, err := protocol.DecodeLeader(protocol.KeyLeader, e.Value); err == nil && l.Nonce == nonce {
			_, _ = st.Delete(ctx, store.Ephemeral, protocol.KeyLeader, e.Revision)
		}
	}
	wk := protocol.WorkerKey(v.ID)
	if e, ok, err := st.Get(ctx, store.Ephemeral, wk); err == nil && ok {
		if p, err := protocol.DecodePresence(wk, e.Value); err == nil && p.Nonce == nonce {
			_, _ = st.Delete(ctx, store.Ephemeral, wk, e.Revision)
		}
	}
}

// Abort stops the coordinator at once and issues no further writes, like a
// crash: its presence (its session) and leadership expire by TTL. Writes already
// in flight may still land. Afterwards every method returns Fatal
// `coordinator aborted`.
func (c *Coordinator) Abort() {
	c.mu.Lock()
	if c.aborted {
		c.mu.Unlock()
		return
	}
	c.aborted = true
	c.mu.Unlock()
	c.v.Latch.Fire(worker.ErrAborted) // halts writes; Fail's own failure if one came first
	c.shutdown()
}

// shutdown stops every actor, timer and goroutine of the worker and waits
// for them (bounded).
func (c *Coordinator) shutdown() {
	c.shutOnce.Do(func() {
		v := c.v
		c.out.Close()
		v.Cancel()
		bound := 2*v.Config.OpTimeout + time.Second
		t := time.NewTimer(bound)
		defer t.Stop()
		p := v.PIDs
		for _, pid := range []*actor.PID{p.Watch, p.Lease, p.Leader, p.SplitWriter, p.Revoke, p.Root} {
			select {
			case <-v.Engine.Poison(pid).Done():
			case <-t.C:
				v.Log.Warn("actor did not stop in time", "actor", pid.ID)
				return
			}
		}
		done := make(chan struct{})
		go func() {
			v.WG.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-t.C:
			v.Log.Warn("background work did not stop in time")
		}
	})
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
