// Package worker holds what every actor of one worker shares and no actor
// owns: the environment, immutable handles only (configuration, engine,
// store, failure latch, goroutine group: env.go, latch.go), the outbox the
// root and the handle share (outbox.go), the sends between actors
// (send.go), metrics, error builders, the adopt-and-retry CAS loop, the
// types of the facts the actors own (a tenancy, a split entry, the job's
// phase, the assigned set, the live members' sessions: facts.go) and the messages only the actors exchange among themselves (the commit writer's).
// It imports no actor's package.
package worker
