// Package worker holds what every actor of one worker shares and no actor
// owns: the environment (configuration, engine, store, goroutine group), the
// sends between actors (send.go), metrics, error builders, the adopt-and-retry
// CAS loop, the derived views fed by messages (held tenancies, the job's
// phase) and the messages only the actors exchange among themselves (the
// commit writer's). It imports no actor's package.
package worker
