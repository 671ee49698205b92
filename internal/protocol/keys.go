package protocol

import (
	"strings"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/naming"
	"github.com/spate-go/coordination/store"
)

// Keys and key prefixes of SPEC §9.2. '.' is the only separator; no prefix
// shadows another.
const (
	// KeyPlan is the durable plan record's key.
	KeyPlan = "plan"
	// KeyLeader is the ephemeral leader value's key.
	KeyLeader = "leader"
	// PrefixSpec prefixes a durable spec record's key: "spec.<split>".
	PrefixSpec = "spec."
	// PrefixSplit prefixes a durable progress record's key and an ephemeral
	// lease's key: "split.<split>".
	PrefixSplit = "split."
	// PrefixAssign prefixes a durable assignment's key: "assign.<instance>".
	PrefixAssign = "assign."
	// PrefixWorker prefixes an ephemeral presence key: "worker.<instance>".
	PrefixWorker = "worker."
	// PrefixProbe prefixes a startup probe key in either keyspace:
	// "_probe.<instance>".
	PrefixProbe = "_probe."
)

// instanceIDMaxLen is the longest instance id (SPEC §3.2), equal to
// coordination.SplitIDMaxLen.
const instanceIDMaxLen = 128

// SpecKey returns the durable key of split id's spec record, "spec.<id>".
func SpecKey(id coordination.SplitID) string { return PrefixSpec + string(id) }

// SplitKey returns "split.<id>": the durable key of the split's progress
// record and the ephemeral key of its lease.
func SplitKey(id coordination.SplitID) string { return PrefixSplit + string(id) }

// AssignKey returns the durable key of instance's assignment, "assign.<instance>".
func AssignKey(instance string) string { return PrefixAssign + instance }

// WorkerKey returns the ephemeral key of instance's presence, "worker.<instance>".
func WorkerKey(instance string) string { return PrefixWorker + instance }

// ProbeKey returns the key instance probes the store with at startup,
// "_probe.<instance>", in either keyspace.
func ProbeKey(instance string) string { return PrefixProbe + instance }

// KeyKind classifies a key by its shape (SPEC §9.2).
type KeyKind int

const (
	// KeyUnknown matches no shape of its keyspace; watch consumers ignore it
	// (logged at debug).
	KeyUnknown KeyKind = iota
	// KeyPlanRecord is the durable "plan".
	KeyPlanRecord
	// KeySpecRecord is a durable "spec.<id>".
	KeySpecRecord
	// KeyProgress is a durable "split.<id>".
	KeyProgress
	// KeyAssignment is a durable "assign.<instance>".
	KeyAssignment
	// KeyLeaderValue is the ephemeral "leader".
	KeyLeaderValue
	// KeyPresence is an ephemeral "worker.<instance>".
	KeyPresence
	// KeyLease is an ephemeral "split.<id>".
	KeyLease
	// KeyProbe is "_probe.<instance>" in either keyspace.
	KeyProbe
)

// String returns a short lower-case name of the kind, for logs.
func (k KeyKind) String() string {
	switch k {
	case KeyPlanRecord:
		return "plan"
	case KeySpecRecord:
		return "spec"
	case KeyProgress:
		return "progress"
	case KeyAssignment:
		return "assignment"
	case KeyLeaderValue:
		return "leader"
	case KeyPresence:
		return "presence"
	case KeyLease:
		return "lease"
	case KeyProbe:
		return "probe"
	}
	return "unknown"
}

// ParseKey classifies key in keyspace ks and returns its suffix: the split id
// or instance id, or "" for the plan and leader keys. A key of no known shape,
// or whose suffix is not a valid name (1..128 bytes of [A-Za-z0-9_-]), is
// [KeyUnknown] with suffix "".
func ParseKey(ks store.Keyspace, key string) (KeyKind, string) {
	type shape struct {
		prefix string
		kind   KeyKind
	}
	var exact string
	var exactKind KeyKind
	var shapes []shape
	switch ks {
	case store.Durable:
		exact, exactKind = KeyPlan, KeyPlanRecord
		shapes = []shape{{PrefixSpec, KeySpecRecord}, {PrefixSplit, KeyProgress}, {PrefixAssign, KeyAssignment}, {PrefixProbe, KeyProbe}}
	case store.Ephemeral:
		exact, exactKind = KeyLeader, KeyLeaderValue
		shapes = []shape{{PrefixWorker, KeyPresence}, {PrefixSplit, KeyLease}, {PrefixProbe, KeyProbe}}
	default:
		return KeyUnknown, ""
	}
	if key == exact {
		return exactKind, ""
	}
	for _, s := range shapes {
		if suffix, ok := strings.CutPrefix(key, s.prefix); ok {
			if !validName(suffix) {
				return KeyUnknown, ""
			}
			return s.kind, suffix
		}
	}
	return KeyUnknown, ""
}

// validName reports whether s is 1..128 bytes of [A-Za-z0-9_-], the rule for
// split ids and instance ids, without building a reason.
func validName(s string) bool {
	if len(s) < 1 || len(s) > instanceIDMaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !naming.Allowed(s[i]) {
			return false
		}
	}
	return true
}
