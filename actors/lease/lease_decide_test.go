package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"pgregory.net/rapid"
)

func TestJudgeRenewal(t *testing.T) {
	readErr := errors.New("boom")
	tests := []struct {
		name     string
		found    bool
		presence protocol.PresenceRecord
		err      error
		want     renewOutcome
	}{
		{"read error decides next beat", false, protocol.PresenceRecord{}, readErr, renewError},
		{"absent ends the session", false, protocol.PresenceRecord{}, nil, renewEnded},
		{"own write landed is adopted", true, protocol.PresenceRecord{Nonce: "n"}, nil, renewOK},
		{"a foreign nonce is a twin", true, protocol.PresenceRecord{Nonce: "x"}, nil, renewTwin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := judgeRenewal("n", tt.found, tt.presence, tt.err)
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJitterProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringMatching(`[a-z0-9-]{1,20}`).Draw(t, "id")
		nonce := rapid.StringMatching(`[0-9a-f]{32}`).Draw(t, "nonce")
		r := rapid.Uint64().Draw(t, "round")
		f := jitter(id, nonce, r)
		if f < 0.8 || f >= 1.2 {
			t.Fatalf("f_r = %v outside [0.8, 1.2)", f)
		}
		if jitter(id, nonce, r) != f {
			t.Fatal("jitter is not deterministic")
		}
		d := heartbeatInterval(30*time.Second, id, nonce, r)
		if d < 8*time.Second || d >= 12*time.Second {
			t.Fatalf("interval %s", d)
		}
	})
	// It varies with the round and between workers.
	if jitter("w1", "n", 1) == jitter("w1", "n", 2) || jitter("w1", "n", 1) == jitter("w2", "n", 1) {
		t.Fatal("jitter does not vary")
	}
}

// A renewal proven landed by the watch is credited from the oldest renewal
// whose fate was unknown, never from a later one; a landed answer settles
// every earlier renewal.
func TestRenewalClock(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var r worker.RenewalClock
	r.Restart(at(0))
	if got := r.Sent(at(10)); !got.Equal(at(10)) {
		t.Fatalf("first unknown renewal credited from %v", got)
	}
	if got := r.Sent(at(20)); !got.Equal(at(10)) {
		t.Fatalf("a later renewal must credit the oldest unknown one (10s), got %v", got)
	}
	if !r.Proven(true) || !r.LastOK.Equal(at(10)) {
		t.Fatalf("proven in flight: lastOK %v, want 10s", r.LastOK)
	}
	if !r.UnknownSince.Equal(at(10)) {
		t.Fatal("a renewal still in flight must stay unknown")
	}
	r.Landed(at(20))
	if !r.LastOK.Equal(at(20)) || !r.UnknownSince.IsZero() {
		t.Fatalf("landed: %+v", r)
	}
	if r.Proven(false) {
		t.Fatal("nothing unknown, nothing to credit")
	}
	r.Landed(at(5))
	if !r.LastOK.Equal(at(20)) {
		t.Fatal("an older write must never move lastOK back")
	}
}

// TestJudgeHolder is the twin-versus-fenced rule the presence renewal, the
// session takeover, the leader renewal and sighting, and the claim's
// owner-session check all apply.
func TestJudgeHolder(t *testing.T) {
	tests := []struct {
		name  string
		found bool
		got   string
		want  worker.KeyHolder
	}{
		{"absent", false, "", worker.HolderGone},
		{"absent whatever the value", false, "n1", worker.HolderGone},
		{"this session's nonce", true, "n1", worker.HolderMine},
		{"another session's nonce", true, "n2", worker.HolderOther},
		{"an empty nonce is another session's", true, "", worker.HolderOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := worker.JudgeHolder("n1", tt.found, tt.got); got != tt.want {
				t.Fatalf("judgeHolder = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJudgeTakeover(t *testing.T) {
	tests := []struct {
		name      string
		ended     string
		found     string
		decodeErr error
		twin      bool
	}{
		{"the ended session's own value", "n1", "n1", nil, false},
		{"an earlier attempt of this announce landed", "n1", "n2", nil, false},
		{"another nonce after an end is a twin", "n1", "n3", nil, true},
		{"an unreadable value is taken over", "n1", "", errors.New("corrupt"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeTakeover(tt.ended, "n2", protocol.PresenceRecord{Nonce: tt.found}, tt.decodeErr); got != tt.twin {
				t.Fatalf("judgeTakeover = %v, want %v", got, tt.twin)
			}
		})
	}
}

func TestReadBackLanded(t *testing.T) {
	readErr := errors.New("boom")
	tests := []struct {
		name   string
		found  bool
		got    string
		gotRev uint64
		err    error
		want   bool
	}{
		{"this session's nonce at a newer revision proves a renewal landed", true, "n", 8, nil, true},
		{"the revision the renewal was sent at proves nothing", true, "n", 7, nil, false},
		{"an older revision proves nothing", true, "n", 6, nil, false},
		{"another session's nonce proves nothing", true, "x", 8, nil, false},
		{"an absent key proves nothing", false, "", 0, nil, false},
		{"a failed read proves nothing", true, "n", 8, readErr, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := worker.ReadBackLanded("n", 7, tt.found, tt.got, tt.gotRev, tt.err); got != tt.want {
				t.Fatalf("readBackLanded = %v, want %v", got, tt.want)
			}
		})
	}
}

// A read back credits a renewal only when it shows this session's own key
// at a revision no renewal before the failed one could have written.
func TestReadBackLandedProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nonce := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "nonce")
		got := rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "got")
		rev, gotRev := rapid.Uint64Range(0, 9).Draw(t, "rev"), rapid.Uint64Range(0, 9).Draw(t, "gotRev")
		found, failed := rapid.Bool().Draw(t, "found"), rapid.Bool().Draw(t, "failed")
		var err error
		if failed {
			err = errors.New("boom")
		}
		want := !failed && found && got == nonce && gotRev > rev
		if worker.ReadBackLanded(nonce, rev, found, got, gotRev, err) != want {
			t.Fatalf("readBackLanded(%q, %d, %v, %q, %d, %v) != %v", nonce, rev, found, got, gotRev, err, want)
		}
	})
}

// The retry after a failed renewal comes well inside a heartbeat interval,
// so two heartbeats' failures leave room to renew before the lease runs out,
// and at most a few retries fit in one heartbeat.
func TestRenewRetryDelay(t *testing.T) {
	for _, lease := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 30 * time.Second} {
		d := worker.RenewRetryDelay(lease)
		if minBeat := time.Duration(float64(lease/3) * 0.8); d <= 0 || d > minBeat/3 || 4*d < lease/3 {
			t.Fatalf("lease %s: retry delay %s, want in (0, %s] and a quarter heartbeat", lease, d, minBeat/3)
		}
	}
}

// judgeStartupPresence never takes another session's value over unless it
// stood still for the window at the revision first read, always refuses a
// value that moved since, and creates an absent key.
func TestJudgeStartupPresenceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		found := rapid.Bool().Draw(t, "found")
		first := rapid.Uint64Range(0, 3).Draw(t, "first")
		rev := rapid.Uint64Range(1, 3).Draw(t, "rev")
		got := rapid.SampledFrom([]string{"n", "old", ""}).Draw(t, "got")
		var decodeErr error
		if rapid.Bool().Draw(t, "unreadable") {
			decodeErr = errors.New("corrupt")
		}
		silent := rapid.Bool().Draw(t, "silent")
		step := judgeStartupPresence("n", first, found, rev, got, decodeErr, silent)
		own := decodeErr == nil && got == "n"
		switch {
		case !found:
			if step != stepCreate {
				t.Fatalf("absent key: %v, want create", step)
			}
		case own:
			if step != stepTakeOver {
				t.Fatalf("own value: %v, want take over", step)
			}
		case first != 0 && rev != first:
			if step != stepTwin {
				t.Fatalf("a value that moved: %v, want twin", step)
			}
		case step == stepTakeOver && (first == 0 || !silent):
			t.Fatalf("took another session's value over before it stood still for the window (first %d, silent %v)", first, silent)
		case step != stepTakeOver && step != stepWait:
			t.Fatalf("a standing value: %v", step)
		}
	})
}

// The twin window leaves a live session time to answer a challenge and
// still lands a restart's takeover within one heartbeat of its first read:
// positive, at least two reads every LeaseDuration/12 long, and with the
// read that ends it (rounded up to the next read) no longer than
// LeaseDuration/3.
func TestTwinWindowFitsInAHeartbeat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lease := time.Duration(rapid.Int64Range(int64(300*time.Millisecond), int64(time.Hour)).Draw(t, "lease"))
		w, poll := twinWindow(lease), worker.RenewRetryDelay(lease)
		reads := (w + poll - 1) / poll
		if w < 2*poll || reads*poll > lease/3 {
			t.Fatalf("lease %v: window %v, reads every %v: %d reads, %v; want at least two reads and within %v", lease, w, poll, reads, reads*poll, lease/3)
		}
	})
}
