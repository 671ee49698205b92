package actors

import (
	"errors"
	"testing"
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
