package worker

import "log/slog"

// FailureRun logs a run of failed renewals without flooding the log: the
// first failure of a run at Warn, the retries after it at Debug, and the
// first success after a run at Info with how many attempts failed. A
// renewal is retried several times per heartbeat during an outage.
type FailureRun struct{ failures int }

// Failed records a failed attempt and logs it.
func (f *FailureRun) Failed(log *slog.Logger, msg string, err error) {
	f.failures++
	if f.failures == 1 {
		log.Warn(msg, "err", err)
		return
	}
	log.Debug(msg, "err", err, "failures", f.failures)
}

// Landed ends the run, logging msg if attempts had failed.
func (f *FailureRun) Landed(log *slog.Logger, msg string) {
	if f.failures > 0 {
		log.Info(msg, "failures", f.failures)
	}
	f.failures = 0
}
