package leader

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func TestJudgeAssignWrite(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		err  error
		want assignWrite
	}{
		{"landed", true, nil, assignWritten},
		{"a lost compare", false, nil, assignLost},
		{"a store error", false, errors.New("eof"), assignFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeAssignWrite(tt.ok, tt.err); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeLosses(t *testing.T) {
	tests := []struct {
		name       string
		streak     int
		lost       bool
		wantStreak int
		want       publishRetry
	}{
		{"no loss resets the streak", 3, false, 0, retryNone},
		{"a first loss retries at once", 0, true, 1, retryNow},
		{"a second loss in a row waits for the heartbeat", 1, true, 2, retryHeartbeat},
		{"a long streak keeps waiting", 7, true, 8, retryHeartbeat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, r := judgeLosses(tt.streak, tt.lost)
			if s != tt.wantStreak || r != tt.want {
				t.Fatalf("got (%d, %v), want (%d, %v)", s, r, tt.wantStreak, tt.want)
			}
		})
	}
}

// However the losses fall, a publish with lost writes never triggers an
// immediate retry twice in a row, so a stale view cannot spin; and a
// publish without losses always resets the streak.
func TestJudgeLossesNeverSpins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		losses := rapid.SliceOf(rapid.Bool()).Draw(t, "losses")
		streak, prevNow := 0, false
		for i, lost := range losses {
			var r publishRetry
			streak, r = judgeLosses(streak, lost)
			if r == retryNow && prevNow {
				t.Fatalf("publish %d: an immediate retry right after another", i)
			}
			if !lost && (streak != 0 || r != retryNone) {
				t.Fatalf("publish %d: no loss left streak %d, retry %v", i, streak, r)
			}
			prevNow = r == retryNow
		}
	})
}
