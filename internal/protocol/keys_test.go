package protocol

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

func TestKeyBuilders(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"plan", KeyPlan, "job.plan"},
		{"leader", KeyLeader, "leader"},
		{"spec", SpecKey("s0"), "spec.s0"},
		{"split", SplitKey("s0"), "job.split.s0"},
		{"progress", ProgressKey("s0"), "progress.s0"},
		{"assign", AssignKey("w1"), "job.assign.w1"},
		{"worker", WorkerKey("w1"), "worker.w1"},
		{"probe", ProbeKey("w1"), "_probe.w1"},
		{"challenge", ChallengeKey("w1"), "challenge.w1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestWatchedPrefix checks the layout the watches rely on (docs/protocol.md,
// "Keys"): every key placement needs is under PrefixJob, and no progress
// or spec record is, so a worker watching PrefixJob never sees a commit or
// a descriptor.
func TestWatchedPrefix(t *testing.T) {
	for _, k := range []string{KeyPlan, SplitKey("s0"), AssignKey("w1")} {
		if !strings.HasPrefix(k, PrefixJob) {
			t.Errorf("%q is not under the watched prefix %q", k, PrefixJob)
		}
	}
	for _, k := range []string{ProgressKey("s0"), ProgressKey("job"), SpecKey("s0"), SpecKey("job"), ProbeKey("w1")} {
		if strings.HasPrefix(k, PrefixJob) {
			t.Errorf("%q is under the watched prefix %q", k, PrefixJob)
		}
	}
}

func TestParseKey(t *testing.T) {
	long := strings.Repeat("a", 128)
	for _, tc := range []struct {
		name   string
		ks     store.Keyspace
		key    string
		kind   KeyKind
		suffix string
	}{
		{"plan", store.Durable, "job.plan", KeyPlanRecord, ""},
		{"spec", store.Durable, "spec.s0", KeySpecRecord, "s0"},
		{"split", store.Durable, "job.split.s-0_A", KeySplitRecord, "s-0_A"},
		{"progress", store.Durable, "progress.s-0_A", KeyProgress, "s-0_A"},
		{"assignment", store.Durable, "job.assign.w1", KeyAssignment, "w1"},
		{"durable probe", store.Durable, "_probe.w1", KeyProbe, "w1"},
		{"leader", store.Ephemeral, "leader", KeyLeaderValue, ""},
		{"presence", store.Ephemeral, "worker.w1", KeyPresence, "w1"},
		{"ephemeral probe", store.Ephemeral, "_probe.w1", KeyProbe, "w1"},
		{"challenge", store.Ephemeral, "challenge.w1", KeyChallenge, "w1"},
		{"challenge in durable", store.Durable, "challenge.w1", KeyUnknown, ""},
		{"dotted challenge", store.Ephemeral, "challenge.w1.x", KeyUnknown, ""},
		{"longest split id", store.Durable, "job.split." + long, KeySplitRecord, long},
		{"longest progress id", store.Durable, "progress." + long, KeyProgress, long},
		{"split id too long", store.Durable, "job.split." + long + "a", KeyUnknown, ""},
		{"progress id too long", store.Durable, "progress." + long + "a", KeyUnknown, ""},
		{"empty split id", store.Durable, "job.split.", KeyUnknown, ""},
		{"empty progress id", store.Durable, "progress.", KeyUnknown, ""},
		{"dotted id", store.Durable, "job.spec.a.b", KeyUnknown, ""},
		{"dotted progress id", store.Durable, "progress.a.b", KeyUnknown, ""},
		{"bad byte", store.Ephemeral, "worker.w 1", KeyUnknown, ""},
		// The old layout is unknown now.
		{"old plan", store.Durable, "plan", KeyUnknown, ""},
		{"spec under job", store.Durable, "job.spec.s0", KeyUnknown, ""},
		{"old progress", store.Durable, "split.s0", KeyUnknown, ""},
		{"old assignment", store.Durable, "assign.w1", KeyUnknown, ""},
		{"old lease", store.Ephemeral, "split.s0", KeyUnknown, ""},
		// Keyspaces do not mix.
		{"plan in ephemeral", store.Ephemeral, "job.plan", KeyUnknown, ""},
		{"leader in durable", store.Durable, "leader", KeyUnknown, ""},
		{"spec in ephemeral", store.Ephemeral, "job.spec.s0", KeyUnknown, ""},
		{"split in ephemeral", store.Ephemeral, "job.split.s0", KeyUnknown, ""},
		{"progress in ephemeral", store.Ephemeral, "progress.s0", KeyUnknown, ""},
		{"assign in ephemeral", store.Ephemeral, "job.assign.w1", KeyUnknown, ""},
		{"worker in durable", store.Durable, "worker.w1", KeyUnknown, ""},
		// Shapes are exact.
		{"plan with suffix", store.Durable, "job.plan.x", KeyUnknown, ""},
		{"job prefix alone", store.Durable, "job.", KeyUnknown, ""},
		{"unknown job family", store.Durable, "job.lease.s0", KeyUnknown, ""},
		{"prefix without dot", store.Durable, "job.splits0", KeyUnknown, ""},
		{"progress without dot", store.Durable, "progresss0", KeyUnknown, ""},
		{"empty key", store.Durable, "", KeyUnknown, ""},
		{"unknown keyspace", store.Keyspace(7), "job.plan", KeyUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, suffix := ParseKey(tc.ks, tc.key)
			if kind != tc.kind || suffix != tc.suffix {
				t.Fatalf("ParseKey(%v, %q) = %v %q, want %v %q", tc.ks, tc.key, kind, suffix, tc.kind, tc.suffix)
			}
		})
	}
}

// TestParseKeyInvertsBuilders checks that every builder's key parses back to
// its kind and suffix in its keyspace, and to nothing in the other.
func TestParseKeyInvertsBuilders(t *testing.T) {
	for _, tc := range []struct {
		build func(string) string
		ks    store.Keyspace
		kind  KeyKind
	}{
		{func(s string) string { return SpecKey(coordination.SplitID(s)) }, store.Durable, KeySpecRecord},
		{func(s string) string { return SplitKey(coordination.SplitID(s)) }, store.Durable, KeySplitRecord},
		{func(s string) string { return ProgressKey(coordination.SplitID(s)) }, store.Durable, KeyProgress},
		{AssignKey, store.Durable, KeyAssignment},
		{WorkerKey, store.Ephemeral, KeyPresence},
		{ProbeKey, store.Durable, KeyProbe},
		{ProbeKey, store.Ephemeral, KeyProbe},
		{ChallengeKey, store.Ephemeral, KeyChallenge},
	} {
		for _, name := range []string{"s0", "a", "A-_9", strings.Repeat("z", 128)} {
			key := tc.build(name)
			if kind, suffix := ParseKey(tc.ks, key); kind != tc.kind || suffix != name {
				t.Errorf("ParseKey(%v, %q) = %v %q, want %v %q", tc.ks, key, kind, suffix, tc.kind, name)
			}
			other := store.Ephemeral
			if tc.ks == store.Ephemeral {
				other = store.Durable
			}
			if kind, _ := ParseKey(other, key); kind != KeyUnknown && kind != KeyProbe {
				t.Errorf("ParseKey(%v, %q) = %v, want unknown", other, key, kind)
			}
		}
	}
}

func TestKeyKindString(t *testing.T) {
	want := map[KeyKind]string{
		KeyUnknown: "unknown", KeyPlanRecord: "plan", KeySpecRecord: "spec", KeySplitRecord: "split",
		KeyAssignment: "assignment", KeyProgress: "progress", KeyLeaderValue: "leader", KeyPresence: "presence",
		KeyProbe: "probe", KeyChallenge: "challenge",
	}
	seen := map[string]bool{}
	for k := KeyUnknown; k <= KeyChallenge; k++ {
		s := k.String()
		if s != want[k] {
			t.Errorf("KeyKind(%d).String() = %q, want %q", k, s, want[k])
		}
		if seen[s] {
			t.Fatalf("duplicate name %q for %d", s, k)
		}
		seen[s] = true
	}
	if s := (KeyChallenge + 1).String(); s != "unknown" {
		t.Fatalf("out-of-range kind = %q, want unknown", s)
	}
}
