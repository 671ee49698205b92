package protocol

import (
	"strings"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// Keys and key prefixes (docs/protocol.md, "Keys"). '.' is the only
// separator; no prefix shadows another. Everything placement needs lives
// under [PrefixJob], the one durable prefix workers watch; what a commit
// writes ([PrefixProgress]) and the descriptors ([PrefixSpec]) live outside
// it, and no worker watches them.
const (
	// PrefixJob prefixes every durable key a worker watches: the plan, the
	// specs, the split records and the assignments.
	PrefixJob = "job."
	// KeyPlan is the durable plan record's key.
	KeyPlan = PrefixJob + "plan"
	// KeyLeader is the ephemeral leader value's key.
	KeyLeader = "leader"
	// PrefixSpec prefixes a durable spec record's key: "spec.<split>". Not
	// watched: a claimant reads the spec of the split it claims.
	PrefixSpec = "spec."
	// PrefixSplit prefixes a durable split record's key (placement: owner,
	// session, epoch, status, attempts): "job.split.<split>".
	PrefixSplit = PrefixJob + "split."
	// PrefixAssign prefixes a durable assignment's key:
	// "job.assign.<instance>".
	PrefixAssign = PrefixJob + "assign."
	// PrefixProgress prefixes a durable progress record's key (what commits
	// write: watermark, state, completed): "progress.<split>". Not watched.
	PrefixProgress = "progress."
	// PrefixWorker prefixes an ephemeral presence key, a worker's session:
	// "worker.<instance>".
	PrefixWorker = "worker."
	// PrefixProbe prefixes a startup probe key in either keyspace:
	// "_probe.<session>".
	PrefixProbe = "_probe."
	// PrefixChallenge prefixes an ephemeral challenge key:
	// "challenge.<instance>", written by a process starting with that
	// InstanceID that found its presence key held by another session; a
	// live session answers it by renewing its presence at once
	// (docs/protocol.md, "Sessions", "Restart with the same id").
	PrefixChallenge = "challenge."
)

// instanceIDMaxLen is the longest instance id, equal to
// coordination.SplitIDMaxLen.
const instanceIDMaxLen = 128

// SpecKey returns the durable key of split id's spec record, "spec.<id>".
func SpecKey(id coordination.SplitID) string { return PrefixSpec + string(id) }

// SplitKey returns "job.split.<id>": the durable key of the split's record.
func SplitKey(id coordination.SplitID) string { return PrefixSplit + string(id) }

// ProgressKey returns "progress.<id>": the durable key of the split's
// progress record.
func ProgressKey(id coordination.SplitID) string { return PrefixProgress + string(id) }

// AssignKey returns the durable key of instance's assignment,
// "job.assign.<instance>".
func AssignKey(instance string) string { return PrefixAssign + instance }

// WorkerKey returns the ephemeral key of instance's presence, "worker.<instance>".
func WorkerKey(instance string) string { return PrefixWorker + instance }

// ProbeKey returns the key a starting worker probes the store with,
// "_probe.<session>" in either keyspace, session being its first session's
// nonce: a key of its own, so that two processes started together with one
// InstanceID do not break each other's probe (docs/protocol.md, "Joining").
func ProbeKey(session string) string { return PrefixProbe + session }

// ChallengeKey returns the ephemeral key a process starting as instance
// writes to ask a session holding the presence key whether it is live,
// "challenge.<instance>" (docs/protocol.md, "Sessions", "Restart with the
// same id"). Its value is opaque (the challenger's nonce) and never decoded.
func ChallengeKey(instance string) string { return PrefixChallenge + instance }

// KeyKind classifies a key by its shape (docs/protocol.md, "Keys").
type KeyKind int

const (
	// KeyUnknown matches no shape of its keyspace; watch consumers ignore it
	// (logged at debug).
	KeyUnknown KeyKind = iota
	// KeyPlanRecord is the durable "job.plan".
	KeyPlanRecord
	// KeySpecRecord is a durable "spec.<id>".
	KeySpecRecord
	// KeySplitRecord is a durable "job.split.<id>".
	KeySplitRecord
	// KeyAssignment is a durable "job.assign.<instance>".
	KeyAssignment
	// KeyProgress is a durable "progress.<id>".
	KeyProgress
	// KeyLeaderValue is the ephemeral "leader".
	KeyLeaderValue
	// KeyPresence is an ephemeral "worker.<instance>".
	KeyPresence
	// KeyProbe is "_probe.<session>" in either keyspace.
	KeyProbe
	// KeyChallenge is an ephemeral "challenge.<instance>".
	KeyChallenge
)

// String returns a short lower-case name of the kind, for logs.
func (k KeyKind) String() string {
	switch k {
	case KeyPlanRecord:
		return "plan"
	case KeySpecRecord:
		return "spec"
	case KeySplitRecord:
		return "split"
	case KeyProgress:
		return "progress"
	case KeyAssignment:
		return "assignment"
	case KeyLeaderValue:
		return "leader"
	case KeyPresence:
		return "presence"
	case KeyProbe:
		return "probe"
	case KeyChallenge:
		return "challenge"
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
		shapes = []shape{{PrefixSpec, KeySpecRecord}, {PrefixSplit, KeySplitRecord}, {PrefixAssign, KeyAssignment}, {PrefixProgress, KeyProgress}, {PrefixProbe, KeyProbe}}
	case store.Ephemeral:
		exact, exactKind = KeyLeader, KeyLeaderValue
		shapes = []shape{{PrefixWorker, KeyPresence}, {PrefixProbe, KeyProbe}, {PrefixChallenge, KeyChallenge}}
	default:
		return KeyUnknown, ""
	}
	if key == exact {
		return exactKind, ""
	}
	for _, s := range shapes {
		if suffix, ok := strings.CutPrefix(key, s.prefix); ok {
			if !isName(suffix) {
				return KeyUnknown, ""
			}
			return s.kind, suffix
		}
	}
	return KeyUnknown, ""
}
