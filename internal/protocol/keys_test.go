package protocol

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination/store"
)

func TestKeyBuilders(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"spec", SpecKey("s0"), "spec.s0"},
		{"split", SplitKey("s0"), "split.s0"},
		{"assign", AssignKey("w1"), "assign.w1"},
		{"worker", WorkerKey("w1"), "worker.w1"},
		{"probe", ProbeKey("w1"), "_probe.w1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
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
		{"plan", store.Durable, "plan", KeyPlanRecord, ""},
		{"spec", store.Durable, "spec.s0", KeySpecRecord, "s0"},
		{"progress", store.Durable, "split.s-0_A", KeyProgress, "s-0_A"},
		{"assignment", store.Durable, "assign.w1", KeyAssignment, "w1"},
		{"durable probe", store.Durable, "_probe.w1", KeyProbe, "w1"},
		{"leader", store.Ephemeral, "leader", KeyLeaderValue, ""},
		{"presence", store.Ephemeral, "worker.w1", KeyPresence, "w1"},
		{"lease", store.Ephemeral, "split.s0", KeyLease, "s0"},
		{"ephemeral probe", store.Ephemeral, "_probe.w1", KeyProbe, "w1"},
		{"longest id", store.Durable, "split." + long, KeyProgress, long},
		{"id too long", store.Durable, "split." + long + "a", KeyUnknown, ""},
		{"empty id", store.Durable, "split.", KeyUnknown, ""},
		{"dotted id", store.Durable, "spec.a.b", KeyUnknown, ""},
		{"bad byte", store.Ephemeral, "worker.w 1", KeyUnknown, ""},
		{"plan in ephemeral", store.Ephemeral, "plan", KeyUnknown, ""},
		{"leader in durable", store.Durable, "leader", KeyUnknown, ""},
		{"spec in ephemeral", store.Ephemeral, "spec.s0", KeyUnknown, ""},
		{"assign in ephemeral", store.Ephemeral, "assign.w1", KeyUnknown, ""},
		{"worker in durable", store.Durable, "worker.w1", KeyUnknown, ""},
		{"plan with suffix", store.Durable, "plan.x", KeyUnknown, ""},
		{"prefix without dot", store.Durable, "splits0", KeyUnknown, ""},
		{"empty key", store.Durable, "", KeyUnknown, ""},
		{"unknown keyspace", store.Keyspace(7), "plan", KeyUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, suffix := ParseKey(tc.ks, tc.key)
			if kind != tc.kind || suffix != tc.suffix {
				t.Fatalf("ParseKey(%v, %q) = %v %q, want %v %q", tc.ks, tc.key, kind, suffix, tc.kind, tc.suffix)
			}
		})
	}
}

func TestKeyKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := KeyUnknown; k <= KeyProbe; k++ {
		s := k.String()
		if seen[s] {
			t.Fatalf("duplicate name %q for %d", s, k)
		}
		seen[s] = true
	}
}
