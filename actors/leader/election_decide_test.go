package leader

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
)

func TestJudgeElection(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		err  error
		want electOutcome
	}{
		{"the key is ours", true, nil, electWon},
		{"another worker holds it", false, nil, electLost},
		{"the store failed", false, errors.New("eof"), electFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeElection(tt.ok, tt.err); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeLeaderUpdate(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		err  error
		want leaderRenewal
	}{
		{"landed", true, nil, leaderRenewed},
		{"a lost compare reads the key", false, nil, leaderRenewRead},
		{"a store error leaves the fate unknown", false, errors.New("eof"), leaderRenewUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeLeaderUpdate(tt.ok, tt.err); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeLeaderRead(t *testing.T) {
	readErr := errors.New("boom")
	tests := []struct {
		name   string
		found  bool
		lr     protocol.LeaderRecord
		err    error
		want   leaderRenewal
		wantEr error
	}{
		{"a read error leaves the fate unknown", true, protocol.LeaderRecord{Nonce: "n"}, readErr, leaderRenewUnknown, readErr},
		{"an absent key is lost", false, protocol.LeaderRecord{}, nil, leaderRenewLost, nil},
		{"our nonce proves an earlier renewal landed", true, protocol.LeaderRecord{Nonce: "n"}, nil, leaderRenewed, nil},
		{"another session's key is lost", true, protocol.LeaderRecord{Nonce: "x"}, nil, leaderRenewLost, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judgeLeaderRead("n", tt.found, tt.lr, tt.err)
			if got != tt.want || !errors.Is(err, tt.wantEr) || (tt.wantEr == nil) != (err == nil) {
				t.Fatalf("got (%v, %v), want (%v, %v)", got, err, tt.want, tt.wantEr)
			}
		})
	}
}

func TestJudgeLeaderPut(t *testing.T) {
	tests := []struct {
		name   string
		put    protocol.LeaderRecord
		putRev uint64
		want   leaderSighting
	}{
		{"another session's key ends the term", protocol.LeaderRecord{Nonce: "x"}, 9, sightingLost},
		{"another session's key at an old revision still ends it", protocol.LeaderRecord{Nonce: "x"}, 1, sightingLost},
		{"our key at a newer revision credits a renewal", protocol.LeaderRecord{Nonce: "n"}, 6, sightingLanded},
		{"our key at the known revision is nothing", protocol.LeaderRecord{Nonce: "n"}, 5, sightingNothing},
		{"our key at an older revision is nothing", protocol.LeaderRecord{Nonce: "n"}, 4, sightingNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeLeaderPut("n", 5, tt.put, tt.putRev); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeLeaderDelete(t *testing.T) {
	tests := []struct {
		name        string
		synthesized bool
		delRev      uint64
		want        bool
	}{
		{"a newer delete ends the term", false, 6, true},
		{"a delete older than our key is stale", false, 4, false},
		{"a delete at our revision is stale", false, 5, false},
		{"a synthesized delete always ends it", true, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeLeaderDelete(tt.synthesized, tt.delRev, 5); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeFenceWrite(t *testing.T) {
	fatal := coordination.Errorf(coordination.Fatal, "broken")
	tests := []struct {
		name    string
		ok      bool
		err     error
		want    fenceStep
		wantErr error
	}{
		{"landed", true, nil, fenceLanded, nil},
		{"a lost compare reads the plan", false, nil, fenceRead, nil},
		{"a transient error retries", false, coordination.Errorf(coordination.Retryable, "timeout"), fenceRetry, nil},
		{"an untyped error retries", false, errors.New("eof"), fenceRetry, nil},
		{"a Fatal error ends the worker", false, fatal, fenceFatal, fatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judgeFenceWrite(tt.ok, tt.err)
			if got != tt.want || err != tt.wantErr {
				t.Fatalf("got (%v, %v), want (%v, %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestJudgeFenceRead(t *testing.T) {
	decodeErr := coordination.Errorf(coordination.Fatal, "corrupt")
	mine := protocol.PlanRecord{Fingerprint: "job:v1"}
	tests := []struct {
		name      string
		getErr    error
		found     bool
		pl        protocol.PlanRecord
		decodeErr error
		want      fenceStep
		wantKind  coordination.ErrorKind
		reason    string
	}{
		{"a read error retries", errors.New("eof"), false, protocol.PlanRecord{}, nil, fenceRetry, 0, ""},
		{"a missing plan is Fatal", nil, false, protocol.PlanRecord{}, nil, fenceFatal, coordination.Fatal, "plan record is missing"},
		{"a corrupt plan is Fatal", nil, true, protocol.PlanRecord{}, decodeErr, fenceFatal, coordination.Fatal, "corrupt"},
		{"another job's plan is Fatal", nil, true, protocol.PlanRecord{Fingerprint: "other:v1"}, nil, fenceFatal, coordination.Fatal, "fingerprint mismatch"},
		{"our job's plan rebases", nil, true, mine, nil, fenceRebase, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judgeFenceRead(tt.getErr, tt.found, tt.pl, tt.decodeErr, "job:v1")
			if got != tt.want || coordination.KindOf(err) != tt.wantKind {
				t.Fatalf("got (%v, %v), want (%v, kind %v)", got, err, tt.want, tt.wantKind)
			}
			if tt.reason != "" && !strings.Contains(worker.ReasonOf(err), tt.reason) {
				t.Fatalf("error %v does not say %q", err, tt.reason)
			}
		})
	}
}

// A put of the leader key ends the term exactly when it carries another
// session's nonce, and credits a renewal only for this session's key at a
// newer revision.
func TestJudgeLeaderPutProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nonce := rapid.SampledFrom([]string{"n", "x"}).Draw(t, "nonce")
		rev := rapid.Uint64Range(0, 10).Draw(t, "rev")
		putRev := rapid.Uint64Range(0, 10).Draw(t, "putRev")
		got := judgeLeaderPut("n", rev, protocol.LeaderRecord{Nonce: nonce}, putRev)
		if (got == sightingLost) != (nonce != "n") {
			t.Fatalf("nonce %q: got %v", nonce, got)
		}
		if got == sightingLanded && putRev <= rev {
			t.Fatalf("credited a put at %d not newer than %d", putRev, rev)
		}
	})
}
