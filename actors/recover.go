package actors

import (
	"fmt"
	"runtime/debug"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
)

// recoverMiddleware wraps an actor's Receive so that a panic never reaches
// hollywood (which restarts the actor, losing its state, and kills the
// process on the fourth restart). The panic is logged with its stack and
// fails the worker with Fatal `internal error: <panic value>`.
func recoverMiddleware(v *worker.Env, name string) actor.MiddlewareFunc {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			defer func() {
				if r := recover(); r != nil {
					v.Log.Error("internal error", "actor", name, "err", fmt.Sprint(r), "stack", string(debug.Stack()))
					v.Fail(coordination.Errorf(coordination.Fatal, "internal error: %v", r))
				}
			}()
			next(c)
		}
	}
}
