package natsstore

import "time"

// logLimiter lets at most one log line per interval through and counts the
// lines it holds back, so that a flapping connection logs a summary rather
// than a line per flap. The zero value with every set is ready; it is not
// safe for concurrent use.
type logLimiter struct {
	every time.Duration

	logged     bool      // a line has passed
	last       time.Time // when the last line passed
	suppressed int       // lines held back since then
}

// allow reports whether a line at now may be logged and, when it may, how
// many lines were held back before it (the count then starts again).
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	if l.logged && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	suppressed, l.suppressed = l.suppressed, 0
	l.logged, l.last = true, now
	return true, suppressed
}
