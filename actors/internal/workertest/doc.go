// Package workertest is the test support the actors' packages share:
// planners, a test configuration, a faulty store, a minimal environment, a
// recording actor, an engine with a mock clock, and the watch's snapshots
// of the live members (Presence).
package workertest
