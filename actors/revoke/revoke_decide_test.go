package revoke

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination/actors/internal/wire"
)

func TestDecideRevocation(t *testing.T) {
	live := &revocation{}
	cancelled := &revocation{cancelled: true}
	tests := []struct {
		name     string
		assigned bool
		e        *revocation
		want     revokeAction
	}{
		{"assigned, no entry", true, nil, revokeNothing},
		{"assigned, live entry: cancel", true, live, revokeCancel},
		{"assigned, cancelled entry", true, cancelled, revokeNothing},
		{"unassigned, no entry: request", false, nil, revokeRequest},
		{"unassigned, cancelled: re-request", false, cancelled, revokeRequest},
		{"unassigned, live: deadline runs", false, live, revokeNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideRevocation(tt.assigned, tt.e); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeDeadline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := 10 * time.Second
	tests := []struct {
		name string
		e    revocation
		now  time.Time
		want revokeDeadline
	}{
		{"live before the deadline", revocation{started: t0}, t0.Add(d - 1), deadlineNone},
		{"live at the deadline is forced", revocation{started: t0}, t0.Add(d), deadlineForced},
		{"cancelled with recent progress", revocation{started: t0, lastProgress: t0.Add(d), cancelled: true}, t0.Add(d + 1), deadlineNone},
		{"cancelled and silent", revocation{started: t0, lastProgress: t0, cancelled: true}, t0.Add(d), deadlineSilent},
		{"re-requested keeps started: overdue at once", revocation{started: t0, lastProgress: t0.Add(2 * d)}, t0.Add(2 * d), deadlineForced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeDeadline(tt.e, tt.now, d); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeResolution(t *testing.T) {
	tests := []struct {
		name    string
		reason  wire.EndReason
		outcome wire.HandBackOutcome
		want    string
	}{
		{"a drained hand-back landed", wire.EndDrained, wire.HandBackLanded, "drained"},
		{"a completion landed", wire.EndCompleted, wire.HandBackLanded, "drained"},
		{"a release landed", wire.EndReleased, wire.HandBackLanded, "drained"},
		{"a Fail landed: forced", wire.EndFailed, wire.HandBackLanded, "forced"},
		{"a hand-back fenced", wire.EndDrained, wire.HandBackFenced, "forced"},
		{"a hand-back unconfirmed", wire.EndDrained, wire.HandBackUnconfirmed, "forced"},
		{"a forced hand-back landed", wire.EndRevoked, wire.HandBackLanded, "drained"},
		{"a forced hand-back unconfirmed", wire.EndRevoked, wire.HandBackUnconfirmed, "forced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeResolution(tt.reason, tt.outcome); got != tt.want {
				t.Fatalf("judgeResolution = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDeadlineAtIsWhenJudgeDeadlineFiresFirst: the revoke actor arms its
// timer at deadlineAt, so judgeDeadline finds an entry due exactly from
// that instant on, and not an instant before.
func TestDeadlineAtIsWhenJudgeDeadlineFiresFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := time.Unix(1_000_000, 0)
		ms := func(label string) time.Duration {
			return time.Duration(rapid.Int64Range(0, 100_000).Draw(t, label)) * time.Millisecond
		}
		e := revocation{
			started:      base.Add(ms("started")),
			lastProgress: base.Add(ms("lastProgress")),
			cancelled:    rapid.Bool().Draw(t, "cancelled"),
		}
		drain := ms("drain") + time.Millisecond
		now := base.Add(ms("now"))
		due := judgeDeadline(e, now, drain) != deadlineNone
		if at := deadlineAt(e, drain); due != !now.Before(at) {
			t.Fatalf("at %v: judged due %v, deadlineAt %v", now.Sub(base), due, at.Sub(base))
		}
	})
}
