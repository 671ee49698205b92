package natsstore

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestLogLimiter(t *testing.T) {
	l := logLimiter{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{9 * time.Second, false, 0},
		{10 * time.Second, true, 2},
		{30 * time.Second, true, 0},
		{31 * time.Second, false, 0},
		{45 * time.Second, true, 1},
	}
	for _, s := range steps {
		ok, n := l.allow(t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Fatalf("at %s: allow = (%v, %d), want (%v, %d)", s.at, ok, n, s.ok, s.suppressed)
		}
	}
}

func TestLogLimiterProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		every := time.Duration(rapid.Int64Range(1, 1e10).Draw(t, "every"))
		gaps := rapid.SliceOf(rapid.Int64Range(0, 2e10)).Draw(t, "gaps")
		l := logLimiter{every: every}
		now := time.Unix(0, 0)
		var last time.Time
		logged, reported := 0, 0
		for i, g := range gaps {
			now = now.Add(time.Duration(g))
			ok, n := l.allow(now)
			switch {
			case i == 0 && !ok:
				t.Fatalf("the first line was held back")
			case ok && i > 0 && now.Sub(last) < every:
				t.Fatalf("two lines %s apart, interval %s", now.Sub(last), every)
			case !ok && now.Sub(last) >= every:
				t.Fatalf("a line %s after the last one was held back, interval %s", now.Sub(last), every)
			case !ok && n != 0:
				t.Fatalf("a held-back line reported %d suppressed", n)
			}
			if ok {
				logged++
				reported += n
				last = now
			}
		}
		// Every line is either logged, reported as suppressed by a later
		// one, or still counted for the next.
		if logged+reported+l.suppressed != len(gaps) {
			t.Fatalf("%d logged + %d reported + %d pending != %d lines", logged, reported, l.suppressed, len(gaps))
		}
	})
}
