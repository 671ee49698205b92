package actors

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
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

func wm(n int64) *int64 { return &n }

func TestClassifyProgressConflict(t *testing.T) {
	base := protocol.ProgressRecord{ID: "s", Epoch: 2, Owner: "me", Watermark: wm(5), State: []byte{}}
	intended := base
	intended.Watermark = wm(9)
	other := base
	other.Owner = "peer"
	higher := base
	higher.Epoch, higher.Owner = 3, "peer"
	done := base
	done.Completed = true
	tests := []struct {
		name  string
		found bool
		got   protocol.ProgressRecord
		want  conflictClass
	}{
		{"absent is a fence", false, protocol.ProgressRecord{}, conflictFenced},
		{"the intended write landed", true, intended, conflictLanded},
		{"this tenancy's completion landed", true, done, conflictLanded},
		{"own earlier write: adopt", true, base, conflictAdopt},
		{"another owner", true, other, conflictFenced},
		{"a later fence", true, higher, conflictFenced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyProgressConflict("me", 2, intended, tt.found, tt.got); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClassifySplitConflict(t *testing.T) {
	base := protocol.SplitRecord{ID: "s", Epoch: 2, Owner: "me", Nonce: "n", Status: protocol.StatusRunnable}
	intended := base.HandBack(7)
	otherSession := base
	otherSession.Nonce = "x"
	higher := base.Claim("peer", "p", 3, false, 0)
	done := base.Complete(0)
	tests := []struct {
		name  string
		found bool
		got   protocol.SplitRecord
		want  conflictClass
	}{
		{"absent is a fence", false, protocol.SplitRecord{}, conflictFenced},
		{"the intended write landed", true, base.HandBack(9), conflictLanded},
		{"own earlier write: adopt", true, base, conflictAdopt},
		{"another session of this instance", true, otherSession, conflictFenced},
		{"a later claim", true, higher, conflictFenced},
		{"terminal", true, done, conflictFenced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifySplitConflict("me", "n", 2, intended, tt.found, tt.got); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMovedAway(t *testing.T) {
	held := tenancy{epoch: 2, nonce: "n"}
	mine := protocol.SplitRecord{Epoch: 2, Owner: "me", Nonce: "n"}
	tests := []struct {
		name string
		rec  protocol.SplitRecord
		want bool
	}{
		{"still ours", mine, false},
		{"completed by us", mine.Complete(0), false},
		{"a later epoch", mine.Claim("peer", "p", 3, true, 0), true},
		{"another session at our epoch", protocol.SplitRecord{Epoch: 2, Owner: "me", Nonce: "x"}, true},
		{"handed back at our epoch", mine.HandBack(0), true},
		{"an older epoch (stale)", protocol.SplitRecord{Epoch: 1, Owner: "peer", Nonce: "p"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := movedAway(tt.rec, "me", held); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckWatermark(t *testing.T) {
	rec := protocol.ProgressRecord{Watermark: wm(57)}
	if err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 57}); err != nil {
		t.Fatalf("equal watermark: %v", err)
	}
	err := checkWatermark("s-7", rec, coordination.SplitProgress{Watermark: 40})
	want := "coordination error (fatal): split s-7: commit watermark 40 is below the committed watermark 57; a source must never move a watermark backwards"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if err := checkWatermark("s", protocol.ProgressRecord{}, coordination.SplitProgress{Watermark: -3}); err != nil {
		t.Fatalf("null watermark: %v", err)
	}
}

func TestVerdict(t *testing.T) {
	c := protocol.SplitRecord{Status: protocol.StatusCompleted}
	q := protocol.SplitRecord{Status: protocol.StatusQuarantined}
	r := protocol.SplitRecord{Status: protocol.StatusRunnable}
	tests := []struct {
		name    string
		recs    []protocol.SplitRecord
		planned uint64
		ok      bool
		stalled bool
	}{
		{"empty final plan completes", nil, 0, true, false},
		{"all completed", []protocol.SplitRecord{c, c}, 2, true, false},
		{"fewer than planned", []protocol.SplitRecord{c}, 2, false, false},
		{"a runnable split", []protocol.SplitRecord{c, r}, 2, false, false},
		{"a quarantined split stalls", []protocol.SplitRecord{c, q}, 2, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stalled, _, _, ok := verdict(tt.recs, tt.planned)
			if ok != tt.ok || stalled != tt.stalled {
				t.Fatalf("got ok=%v stalled=%v", ok, stalled)
			}
		})
	}
}

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

// TestVerdictProperty: a verdict is AllComplete only when every listed
// split completed, and never with fewer than planned entries.
func TestVerdictProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		planned := uint64(rapid.IntRange(0, 14).Draw(t, "planned"))
		recs := make([]protocol.SplitRecord, n)
		var c, q, other int
		for i := range recs {
			s := protocol.Status(rapid.IntRange(0, 2).Draw(t, "status"))
			recs[i].Status = s
			switch s {
			case protocol.StatusCompleted:
				c++
			case protocol.StatusQuarantined:
				q++
			default:
				other++
			}
		}
		stalled, gc, gq, ok := verdict(recs, planned)
		switch {
		case uint64(n) < planned || other > 0:
			if ok {
				t.Fatal("verdict without every planned split terminal")
			}
		case !ok:
			t.Fatal("no verdict although every split is terminal")
		case stalled != (q > 0) || gc != uint64(c) || gq != uint64(q):
			t.Fatalf("got stalled=%v %d/%d, want %d/%d", stalled, gc, gq, c, q)
		}
	})
}

// A renewal proven landed by the watch is credited from the oldest renewal
// whose fate was unknown, never from a later one; a landed answer settles
// every earlier renewal.
func TestRenewalClock(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var r renewalClock
	r.restart(at(0))
	if got := r.sent(at(10)); !got.Equal(at(10)) {
		t.Fatalf("first unknown renewal credited from %v", got)
	}
	if got := r.sent(at(20)); !got.Equal(at(10)) {
		t.Fatalf("a later renewal must credit the oldest unknown one (10s), got %v", got)
	}
	if !r.proven(true) || !r.lastOK.Equal(at(10)) {
		t.Fatalf("proven in flight: lastOK %v, want 10s", r.lastOK)
	}
	if !r.unknownSince.Equal(at(10)) {
		t.Fatal("a renewal still in flight must stay unknown")
	}
	r.landed(at(20))
	if !r.lastOK.Equal(at(20)) || !r.unknownSince.IsZero() {
		t.Fatalf("landed: %+v", r)
	}
	if r.proven(false) {
		t.Fatal("nothing unknown, nothing to credit")
	}
	r.landed(at(5))
	if !r.lastOK.Equal(at(20)) {
		t.Fatal("an older write must never move lastOK back")
	}
}
