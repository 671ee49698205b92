package protocol

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/spate-go/coordination"
)

// Schema is the record schema this library writes and understands (docs/protocol.md, "Records").
const Schema = 1

// PlanRecord is the durable "job.plan" record (docs/protocol.md, "Records").
type PlanRecord struct {
	// Fingerprint is the job's full planner fingerprint; never empty.
	Fingerprint string
	// Generation is the generation of the latest leadership.
	Generation uint64
	// Finality says whether the plan is complete.
	Finality coordination.PlanFinality
	// Planned is a lower bound on the number of split records.
	Planned uint64
	// PlannerState is the planner's cursor; nil is stored as null.
	PlannerState []byte
	// UpdatedAtMs is the advisory wall time of the last write, in ms.
	UpdatedAtMs int64
}

// SpecRecord is the immutable durable "spec.<id>" record (docs/protocol.md, "Records").
type SpecRecord struct {
	// ID is the split; it equals the key suffix.
	ID coordination.SplitID
	// FP is the job's fingerprint hash.
	FP uint64
	// Generation is the leadership generation that created the record.
	Generation uint64
	// Weight is the split's balancing load; at least 1 in the store (0 is
	// written as 1).
	Weight uint64
	// Descriptor is the opaque descriptor; never null in the store (nil is
	// written as "").
	Descriptor []byte
}

// SplitRecord is the durable "job.split.<id>" record: where a split is
// placed and by which session (docs/protocol.md, "Records"). Every
// worker watches it. Claims, hand-backs, fails, quarantines and completions
// CAS it; commits never touch it.
type SplitRecord struct {
	// ID is the split; it equals the key suffix.
	ID coordination.SplitID
	// FP is the job's fingerprint hash.
	FP uint64
	// Weight is the split's balancing load, copied from its spec at
	// seeding so that placement needs no spec; at least 1.
	Weight uint64
	// Epoch is the latest tenancy's epoch; 0 means never owned.
	Epoch uint64
	// Status is runnable, completed or quarantined.
	Status Status
	// Owner is the owning instance id; "" is stored as null.
	Owner string
	// Nonce is the owning session's nonce; "" (null) exactly when Owner is.
	Nonce string
	// Attempts counts delivery attempts consumed; it only grows.
	Attempts uint32
	// WrittenAtMs is the advisory wall time of the last write, in ms.
	WrittenAtMs int64
	// Parent is the split a residual was cut from; "" (the field omitted)
	// for a planned split (docs/protocol.md, "Runtime split").
	Parent coordination.SplitID
}

// ProgressRecord is the durable "progress.<id>" record: what the split's
// tenancies committed (docs/protocol.md, "Records"). It is the
// commit fence: a claimant raises its epoch before delivering the split, so
// a superseded owner's commit CAS loses. No worker watches it.
type ProgressRecord struct {
	// ID is the split; it equals the key suffix.
	ID coordination.SplitID
	// FP is the job's fingerprint hash.
	FP uint64
	// Epoch is the epoch of the tenancy that fenced it last; 0 for a seed.
	Epoch uint64
	// Owner is that tenancy's instance id; "" (null) for a seed.
	Owner string
	// Watermark is the committed watermark; nil (null) until the first
	// commit unless seeded.
	Watermark *int64
	// State is the committed resume state; nil is stored as null.
	State []byte
	// Completed is the committed completed flag; terminal once true.
	Completed bool
	// WrittenAtMs is the advisory wall time of the last write, in ms.
	WrittenAtMs int64
	// Descriptor is the primary's descriptor once the split was cut, which
	// replaces the spec's for every later tenancy; nil (the field omitted)
	// when it never was (docs/protocol.md, "Runtime split"). Non-nil
	// exactly when Cut is.
	Descriptor []byte
	// Cut is the split's latest cut; nil (omitted) when it was never cut.
	// Transitions copy it and never change what it points to.
	Cut *Cut
}

// AssignmentRecord is the durable "job.assign.<instance>" record (docs/protocol.md, "Records").
type AssignmentRecord struct {
	// Generation is the plan generation of the leadership that computed it.
	Generation uint64
	// Splits are the split ids the instance should hold, sorted ascending
	// without duplicates; nil when empty.
	Splits []coordination.SplitID
	// Cuts are the leader's cut requests to the instance, sorted by split,
	// each for a split of Splits; nil (the field omitted) when none
	// (docs/protocol.md, "Runtime split").
	Cuts []CutRequest
}

// LeaderRecord is the ephemeral "leader" value (docs/protocol.md, "Records").
type LeaderRecord struct {
	// Owner is the leading instance id.
	Owner string
	// Nonce is the leading process's nonce.
	Nonce string
	// Generation is the leadership's generation.
	Generation uint64
}

// PresenceRecord is the ephemeral "worker.<instance>" value (docs/protocol.md, "Records").
type PresenceRecord struct {
	// Nonce is the worker process's nonce.
	Nonce string
	// MaxInFlight is the worker's own lane budget; 0 means the default.
	MaxInFlight uint32
	// Remaining are the worker's largest remaining-work estimates, as
	// [LargestEstimates] orders them; nil (the field omitted) when none
	// (docs/protocol.md, "Runtime split").
	Remaining []Estimate
}

// Wire forms: field order is the encoding order of docs/protocol.md "Records"; nil pointers and
// nil slices encode as null, []byte as standard padded base64.

type planWire struct {
	Schema       int    `json:"schema"`
	Fingerprint  string `json:"fingerprint"`
	Generation   uint64 `json:"generation"`
	Finality     string `json:"finality"`
	Planned      uint64 `json:"planned"`
	PlannerState []byte `json:"planner_state"`
	UpdatedAtMs  int64  `json:"updated_at_ms"`
}

type specWire struct {
	Schema     int    `json:"schema"`
	ID         string `json:"id"`
	FP         uint64 `json:"fp"`
	Generation uint64 `json:"generation"`
	Weight     uint64 `json:"weight"`
	Descriptor []byte `json:"descriptor"`
}

type splitWire struct {
	Schema      int     `json:"schema"`
	ID          string  `json:"id"`
	FP          uint64  `json:"fp"`
	Weight      uint64  `json:"weight"`
	Epoch       uint64  `json:"epoch"`
	Status      string  `json:"status"`
	Owner       *string `json:"owner"`
	Nonce       *string `json:"nonce"`
	Attempts    uint32  `json:"attempts"`
	WrittenAtMs int64   `json:"written_at_ms"`
	Parent      *string `json:"parent,omitzero"`
}

type progressWire struct {
	Schema      int      `json:"schema"`
	ID          string   `json:"id"`
	FP          uint64   `json:"fp"`
	Epoch       uint64   `json:"epoch"`
	Owner       *string  `json:"owner"`
	Watermark   *int64   `json:"watermark"`
	State       []byte   `json:"state"`
	Completed   bool     `json:"completed"`
	WrittenAtMs int64    `json:"written_at_ms"`
	Descriptor  []byte   `json:"descriptor,omitzero"`
	Cut         *cutWire `json:"cut,omitzero"`
}

type cutWire struct {
	ID         string `json:"id"`
	Epoch      uint64 `json:"epoch"`
	Counter    uint64 `json:"counter"`
	Weight     uint64 `json:"weight"`
	Descriptor []byte `json:"descriptor"`
}

type assignmentWire struct {
	Schema     int              `json:"schema"`
	Generation uint64           `json:"generation"`
	Splits     []string         `json:"splits"`
	Cuts       []cutRequestWire `json:"cuts,omitzero"`
}

type leaderWire struct {
	Schema     int    `json:"schema"`
	Owner      string `json:"owner"`
	Nonce      string `json:"nonce"`
	Generation uint64 `json:"generation"`
}

type presenceWire struct {
	Schema      int            `json:"schema"`
	Nonce       string         `json:"nonce"`
	MaxInFlight uint32         `json:"max_in_flight"`
	Remaining   []estimateWire `json:"remaining,omitzero"`
}

// marshal encodes a wire struct; these types cannot fail to encode.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("protocol: encoding a record failed: " + err.Error())
	}
	return b
}

// finalityString spells a plan finality as the record does.
func finalityString(f coordination.PlanFinality) string {
	if f == coordination.PlanFinal {
		return "final"
	}
	return "open"
}

// EncodePlan returns r's record bytes.
func EncodePlan(r PlanRecord) []byte {
	return marshal(planWire{Schema, r.Fingerprint, r.Generation, finalityString(r.Finality),
		r.Planned, r.PlannerState, r.UpdatedAtMs})
}

// EncodeSpec returns r's record bytes. A weight of 0 is written as 1 and a nil
// descriptor as "" (docs/protocol.md, "Records").
func EncodeSpec(r SpecRecord) []byte {
	d := r.Descriptor
	if d == nil {
		d = []byte{}
	}
	return marshal(specWire{Schema, string(r.ID), r.FP, r.Generation, max(r.Weight, 1), d})
}

// EncodeSplit returns r's record bytes; an empty Owner or Nonce is written
// as null.
func EncodeSplit(r SplitRecord) []byte {
	return appendSplit(make([]byte, 0, 200+len(r.ID)+len(r.Owner)+len(r.Nonce)+len(r.Parent)), splitWire{Schema, string(r.ID), r.FP, max(r.Weight, 1), r.Epoch, r.Status.String(), nullable(r.Owner),
		nullable(r.Nonce), r.Attempts, r.WrittenAtMs, nullable(string(r.Parent))})
}

// EncodeProgress returns r's record bytes; an empty Owner is written as null;
// Descriptor and Cut are omitted when nil (docs/protocol.md, "Runtime split").
func EncodeProgress(r ProgressRecord) []byte {
	w := progressWire{Schema, string(r.ID), r.FP, r.Epoch, nullable(r.Owner),
		r.Watermark, r.State, r.Completed, r.WrittenAtMs, r.Descriptor, nil}
	n := 200 + len(r.ID) + len(r.Owner) + base64.StdEncoding.EncodedLen(len(r.State))
	if c := r.Cut; c != nil {
		w.Cut = &cutWire{string(c.ID), c.Epoch, c.Counter, max(c.Weight, 1), nonNilCopy(c.Descriptor)}
		n += 100 + len(c.ID) + base64.StdEncoding.EncodedLen(len(c.Descriptor)) + base64.StdEncoding.EncodedLen(len(r.Descriptor))
	}
	return appendProgress(make([]byte, 0, n), w)
}

// nullable returns nil for "" and &s otherwise.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// EncodeAssignment returns r's record bytes, with the split ids sorted and
// deduplicated and the cut requests sorted by split (omitted when none).
func EncodeAssignment(r AssignmentRecord) []byte {
	ids := make([]string, len(r.Splits))
	for i, id := range r.Splits {
		ids[i] = string(id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var cuts []cutRequestWire
	for _, c := range r.Cuts {
		cuts = append(cuts, cutRequestWire{string(c.Split), c.Epoch, c.Counter, c.KeepPPM, c.Parts})
	}
	slices.SortStableFunc(cuts, func(a, b cutRequestWire) int { return cmp.Compare(a.Split, b.Split) })
	return marshal(assignmentWire{Schema, r.Generation, ids, cuts})
}

// EncodeLeader returns r's value bytes.
func EncodeLeader(r LeaderRecord) []byte {
	return marshal(leaderWire{Schema, r.Owner, r.Nonce, r.Generation})
}

// EncodePresence returns r's value bytes; Remaining is written as given
// (order it with [LargestEstimates]) and omitted when empty.
func EncodePresence(r PresenceRecord) []byte {
	var es []estimateWire
	for _, e := range r.Remaining {
		es = append(es, estimateWire{string(e.Split), e.Epoch, e.Remaining})
	}
	return marshal(presenceWire{Schema, r.Nonce, r.MaxInFlight, es})
}

// DecodePlan parses the plan record stored at key. Every failure is a Fatal
// *coordination.Error with a reason of docs/protocol.md "Parse failures". It does not compare the
// fingerprint with this worker's; see [FingerprintMismatch].
func DecodePlan(key string, b []byte) (PlanRecord, error) {
	f, pe := parseFields(b, "schema", "fingerprint", "generation", "finality", "planned", "planner_state", "updated_at_ms")
	if pe != nil {
		return PlanRecord{}, recordError(key, pe)
	}
	r := PlanRecord{
		Fingerprint:  f.nonEmptyString("fingerprint"),
		Generation:   f.uint64("generation"),
		Planned:      f.uint64("planned"),
		PlannerState: f.nullBytes("planner_state"),
		UpdatedAtMs:  f.int64("updated_at_ms"),
	}
	switch fin := f.string("finality"); fin {
	case "open":
		r.Finality = coordination.PlanOpen
	case "final":
		r.Finality = coordination.PlanFinal
	default:
		f.fail(shapeErr("field finality has an unknown value"))
	}
	if f.err != nil {
		return PlanRecord{}, recordError(key, f.err)
	}
	return r, nil
}

// DecodeSpec parses the spec record stored at key ("spec.<id>"), checking
// that its id is the key's suffix and its fp is fp. Every failure is a Fatal
// *coordination.Error with a reason of docs/protocol.md "Parse failures".
func DecodeSpec(key string, b []byte, fp uint64) (SpecRecord, error) {
	f, pe := parseFields(b, "schema", "id", "fp", "generation", "weight", "descriptor")
	if pe != nil {
		return SpecRecord{}, recordError(key, pe)
	}
	id := f.string("id")
	r := SpecRecord{
		ID:         coordination.SplitID(id),
		FP:         f.uint64("fp"),
		Generation: f.uint64("generation"),
		Weight:     f.uint64("weight"),
		Descriptor: f.bytes("descriptor"),
	}
	if f.err == nil && r.Weight == 0 {
		f.fail(shapeErr("field weight is 0"))
	}
	if f.err != nil {
		return SpecRecord{}, recordError(key, f.err)
	}
	if err := checkIdentity(key, PrefixSpec, id, r.FP, fp); err != nil {
		return SpecRecord{}, err
	}
	return r, nil
}

// DecodeSplit parses the split record stored at key ("job.split.<id>"),
// checking that its id is the key's suffix and its fp is fp; owner and nonce
// are null together. Every failure is a Fatal *coordination.Error naming the
// key (docs/protocol.md, "Parse failures").
func DecodeSplit(key string, b []byte, fp uint64) (SplitRecord, error) {
	if r, ok := decodeSplitCanonical(key, b, fp); ok {
		return r, nil
	}
	return decodeSplitFields(key, b, fp)
}

// decodeSplitFields is DecodeSplit for any input: the general decoder,
// which words every failure.
func decodeSplitFields(key string, b []byte, fp uint64) (SplitRecord, error) {
	f, pe := parseFieldsOpt(b, 1, "schema", "id", "fp", "weight", "epoch", "status", "owner", "nonce", "attempts", "written_at_ms", "parent")
	if pe != nil {
		return SplitRecord{}, recordError(key, pe)
	}
	id := f.string("id")
	r := SplitRecord{
		ID:          coordination.SplitID(id),
		FP:          f.uint64("fp"),
		Weight:      f.uint64("weight"),
		Epoch:       f.uint64("epoch"),
		Owner:       f.nullName("owner"),
		Nonce:       f.nullName("nonce"),
		Attempts:    f.uint32("attempts"),
		WrittenAtMs: f.int64("written_at_ms"),
	}
	if st, ok := parseStatus(f.string("status")); ok {
		r.Status = st
	} else {
		f.fail(shapeErr("field status has an unknown value"))
	}
	if f.err == nil && r.Weight == 0 {
		f.fail(shapeErr("field weight is 0"))
	}
	f.checkEpoch(r.Epoch)
	if f.err == nil && (r.Owner == "") != (r.Nonce == "") {
		f.fail(shapeErr("fields owner and nonce must be null together"))
	}
	if f.raw("parent") != nil {
		r.Parent = coordination.SplitID(f.name("parent"))
		if f.err == nil && !IsResidualOf(r.ID, r.Parent) {
			f.fail(shapeErr("field parent does not derive the record's id; a residual's id is derived from its parent"))
		}
	}
	if f.err != nil {
		return SplitRecord{}, recordError(key, f.err)
	}
	if err := checkIdentity(key, PrefixSplit, id, r.FP, fp); err != nil {
		return SplitRecord{}, err
	}
	return r, nil
}

// DecodeProgress parses the progress record stored at key ("progress.<id>"),
// checking that its id is the key's suffix and its fp is fp. Every failure is
// a Fatal *coordination.Error naming the key (docs/protocol.md, "Parse
// failures").
func DecodeProgress(key string, b []byte, fp uint64) (ProgressRecord, error) {
	f, pe := parseFieldsOpt(b, 2, "schema", "id", "fp", "epoch", "owner", "watermark", "state", "completed", "written_at_ms", "descriptor", "cut")
	if pe != nil {
		return ProgressRecord{}, recordError(key, pe)
	}
	id := f.string("id")
	r := ProgressRecord{
		ID:          coordination.SplitID(id),
		FP:          f.uint64("fp"),
		Epoch:       f.uint64("epoch"),
		Owner:       f.nullName("owner"),
		Watermark:   f.nullInt64("watermark"),
		State:       f.nullBytes("state"),
		Completed:   f.bool("completed"),
		WrittenAtMs: f.int64("written_at_ms"),
	}
	f.checkEpoch(r.Epoch)
	if f.raw("descriptor") != nil {
		r.Descriptor = f.bytes("descriptor")
	}
	if f.raw("cut") != nil {
		r.Cut = f.cut("cut", r.ID, r.Epoch)
	}
	if f.err == nil && (r.Descriptor == nil) != (r.Cut == nil) {
		f.fail(shapeErr("fields descriptor and cut must be present together"))
	}
	if f.err != nil {
		return ProgressRecord{}, recordError(key, f.err)
	}
	if err := checkIdentity(key, PrefixProgress, id, r.FP, fp); err != nil {
		return ProgressRecord{}, err
	}
	return r, nil
}

// checkIdentity checks a spec, split or progress record's id against its key and its
// fp against this job's.
func checkIdentity(key, prefix, id string, got, want uint64) error {
	if id != keySuffix(key, prefix) {
		return coordination.Errorf(coordination.Fatal,
			"%s: record is for split %s; the store contents are corrupt", key, quoteID(id))
	}
	if got != want {
		return coordination.Errorf(coordination.Fatal,
			"%s: fingerprint mismatch: the record was written by a job with a different configuration; use one namespace per job", key)
	}
	return nil
}

// DecodeAssignment parses the assignment stored at key. Its splits must be
// valid split ids in strictly ascending order. Every failure is a Fatal
// *coordination.Error with a reason of docs/protocol.md "Parse failures"; the caller logs it at warn
// and keeps following its last readable assignment.
func DecodeAssignment(key string, b []byte) (AssignmentRecord, error) {
	f, pe := parseFieldsOpt(b, 1, "schema", "generation", "splits", "cuts")
	if pe != nil {
		return AssignmentRecord{}, recordError(key, pe)
	}
	r := AssignmentRecord{Generation: f.uint64("generation"), Splits: f.splitIDs("splits")}
	if f.raw("cuts") != nil {
		r.Cuts = f.cutRequests("cuts", r.Splits)
	}
	if f.err != nil {
		return AssignmentRecord{}, recordError(key, f.err)
	}
	return r, nil
}

// DecodeLeader parses the leader value stored at key. Every failure is a
// Fatal *coordination.Error "<key>: unreadable value (<detail>)".
func DecodeLeader(key string, b []byte) (LeaderRecord, error) {
	f, pe := parseFields(b, "schema", "owner", "nonce", "generation")
	if pe != nil {
		return LeaderRecord{}, valueError(key, pe)
	}
	r := LeaderRecord{Owner: f.name("owner"), Nonce: f.name("nonce"), Generation: f.uint64("generation")}
	if f.err != nil {
		return LeaderRecord{}, valueError(key, f.err)
	}
	return r, nil
}

// DecodePresence parses the presence value stored at key. Every failure is a
// Fatal *coordination.Error with a reason of docs/protocol.md "Parse failures"; the caller logs it at
// warn and counts the member as present with the default lane budget.
func DecodePresence(key string, b []byte) (PresenceRecord, error) {
	f, pe := parseFieldsOpt(b, 1, "schema", "nonce", "max_in_flight", "remaining")
	if pe != nil {
		return PresenceRecord{}, recordError(key, pe)
	}
	r := PresenceRecord{Nonce: f.name("nonce"), MaxInFlight: f.uint32("max_in_flight")}
	if f.raw("remaining") != nil {
		r.Remaining = f.estimates("remaining")
	}
	if f.err != nil {
		return PresenceRecord{}, recordError(key, f.err)
	}
	return r, nil
}

// FingerprintMismatch returns the Fatal error of docs/protocol.md "Joining" for a plan record
// holding fingerprint theirs read by a worker started for mine.
func FingerprintMismatch(theirs, mine string) *coordination.Error {
	return &coordination.Error{
		Kind: coordination.Fatal,
		Reason: "job fingerprint mismatch: this store holds the job\n  " + theirs +
			"\nbut this worker was started for\n  " + mine +
			"\nuse a separate store namespace per job",
	}
}
