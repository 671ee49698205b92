package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// Healthy reports whether the worker is fit to hold work, for orchestrator
// readiness probes: nil while it holds its session (it joined the job and
// its presence key is renewed; docs/protocol.md, "Sessions") and both
// watches are live (each delivered its snapshot and has not broken since;
// "Watches and reconcile"). Otherwise it returns the reason as a
// *coordination.Error: the latched Fatal failure, Fatal "coordinator used
// before Start", "coordinator aborted" or "coordinator departed", or
// Retryable while joining, while a new session is being announced after
// the last one ended, or while a watch is being re-established. A worker
// whose job reached its verdict stays healthy until it departs.
//
// It is a method of the concrete type, not of [coordination.Coordinator],
// so that interface is unchanged. It never blocks, does no I/O and is safe
// for concurrent use, so a probe handler may call it on every request.
func (c *Coordinator) Healthy() error {
	c.mu.Lock()
	err, started := c.ended(), c.started
	c.mu.Unlock()
	switch {
	case err != nil:
		return err
	case !started:
		return worker.ErrBeforeStart
	}
	if err := c.v.Failure(); err != nil {
		return err
	}
	session, watches := c.out.Live()
	switch {
	case !session:
		return coordination.Errorf(coordination.Retryable, "worker %s holds no session: joining the job, or announcing a new session after presence renewals did not land for LeaseDuration (%s)", c.v.ID, c.v.Config.LeaseDuration)
	case !watches:
		return coordination.Errorf(coordination.Retryable, "worker %s: watches are not live yet (opening, or re-establishing after a break); it claims nothing meanwhile", c.v.ID)
	}
	return nil
}
