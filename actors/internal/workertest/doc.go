// Package workertest is the test support the actors' packages share:
// planners, a test configuration, a faulty store, a minimal environment, a
// recording actor and an engine with a mock clock.
package workertest
