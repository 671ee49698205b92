package protocol

import (
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
)

// Generators for the rapid properties of this package's records and
// candidates. Every generated record is one the encoders may legally write,
// so it must survive a round trip.

const nameAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

// genName draws a valid split or instance id (1..128 bytes), usually short.
func genName() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.OneOf(rapid.IntRange(1, 8), rapid.IntRange(1, 128)).Draw(t, "len")
		b := make([]byte, n)
		for i := range b {
			b[i] = nameAlphabet[rapid.IntRange(0, len(nameAlphabet)-1).Draw(t, "c")]
		}
		return string(b)
	})
}

// genSplitID draws a valid split id.
func genSplitID() *rapid.Generator[coordination.SplitID] {
	return rapid.Map(genName(), func(s string) coordination.SplitID { return coordination.SplitID(s) })
}

// genBytes draws a non-nil byte string, sometimes empty.
func genBytes() *rapid.Generator[[]byte] {
	return rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 64), func(b []byte) []byte { return append([]byte{}, b...) })
}

// genNullBytes draws nil or a non-nil byte string.
func genNullBytes() *rapid.Generator[[]byte] {
	return rapid.OneOf(rapid.Just[[]byte](nil), genBytes())
}

// genText draws any valid UTF-8 string, including quotes, escapes and HTML
// characters.
func genText() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", `"`, `\`, "<&>", "\u2028", "\x00", "job:v1"}))
}

func genPlan() *rapid.Generator[PlanRecord] {
	return rapid.Custom(func(t *rapid.T) PlanRecord {
		fp := genText().Draw(t, "fingerprint")
		if fp == "" {
			fp = "f"
		}
		return PlanRecord{
			Fingerprint:  fp,
			Generation:   rapid.Uint64().Draw(t, "generation"),
			Finality:     rapid.SampledFrom([]coordination.PlanFinality{coordination.PlanOpen, coordination.PlanFinal}).Draw(t, "finality"),
			Planned:      rapid.Uint64().Draw(t, "planned"),
			PlannerState: genNullBytes().Draw(t, "planner_state"),
			UpdatedAtMs:  rapid.Int64().Draw(t, "updated_at_ms"),
		}
	})
}

func genSpec() *rapid.Generator[SpecRecord] {
	return rapid.Custom(func(t *rapid.T) SpecRecord {
		return SpecRecord{
			ID:         genSplitID().Draw(t, "id"),
			FP:         rapid.Uint64().Draw(t, "fp"),
			Generation: rapid.Uint64().Draw(t, "generation"),
			Weight:     rapid.Uint64Min(1).Draw(t, "weight"),
			Descriptor: genBytes().Draw(t, "descriptor"),
		}
	})
}

// genEpoch draws an epoch a record may carry: anything below the top of
// the range, which decoders reject.
func genEpoch() *rapid.Generator[uint64] { return rapid.Uint64Max(math.MaxUint64 - 1) }

// genStatus draws any of the three statuses.
func genStatus() *rapid.Generator[Status] {
	return rapid.SampledFrom([]Status{StatusRunnable, StatusCompleted, StatusQuarantined})
}

// genSplit draws any valid split record: owner and nonce are null
// together.
func genSplit() *rapid.Generator[SplitRecord] {
	return rapid.Custom(func(t *rapid.T) SplitRecord {
		r := SplitRecord{
			ID:          genSplitID().Draw(t, "id"),
			FP:          rapid.Uint64().Draw(t, "fp"),
			Weight:      rapid.Uint64Min(1).Draw(t, "weight"),
			Epoch:       genEpoch().Draw(t, "epoch"),
			Status:      genStatus().Draw(t, "status"),
			Attempts:    rapid.Uint32().Draw(t, "attempts"),
			WrittenAtMs: rapid.Int64().Draw(t, "written_at_ms"),
		}
		if rapid.Bool().Draw(t, "owned") {
			r.Owner = genName().Draw(t, "owner")
			r.Nonce = genName().Draw(t, "nonce")
		}
		if rapid.Float64Range(0, 1).Draw(t, "residual") < 0.25 {
			r.Parent = genSplitID().Draw(t, "parent")
			r.ID = ResidualID(r.Parent, rapid.Uint64Min(1).Draw(t, "cut epoch"), rapid.Uint64Min(1).Draw(t, "counter"))
		}
		return r
	})
}

// genProgress draws any valid progress record.
func genProgress() *rapid.Generator[ProgressRecord] {
	return rapid.Custom(func(t *rapid.T) ProgressRecord {
		r := ProgressRecord{
			ID:          genSplitID().Draw(t, "id"),
			FP:          rapid.Uint64().Draw(t, "fp"),
			Epoch:       genEpoch().Draw(t, "epoch"),
			Owner:       rapid.OneOf(rapid.Just(""), genName()).Draw(t, "owner"),
			State:       genNullBytes().Draw(t, "state"),
			Completed:   rapid.Bool().Draw(t, "completed"),
			WrittenAtMs: rapid.Int64().Draw(t, "written_at_ms"),
		}
		if rapid.Bool().Draw(t, "has_watermark") {
			w := rapid.Int64().Draw(t, "watermark")
			r.Watermark = &w
		}
		if r.Epoch > 0 && rapid.Float64Range(0, 1).Draw(t, "cut") < 0.25 {
			r.Cut = genCut(r.ID, r.Epoch).Draw(t, "cut")
			r.Descriptor = genBytes().Draw(t, "descriptor")
		}
		return r
	})
}

// genCut draws a valid cut of split id by a tenancy at or below epoch (at
// least 1): a consistent residual id, a weight of at least 1.
func genCut(id coordination.SplitID, epoch uint64) *rapid.Generator[*Cut] {
	return rapid.Custom(func(t *rapid.T) *Cut {
		e := rapid.OneOf(rapid.Just(epoch), rapid.Uint64Range(1, epoch)).Draw(t, "cut epoch")
		c := rapid.OneOf(rapid.Uint64Range(1, 3), rapid.Uint64Min(1)).Draw(t, "counter")
		return &Cut{ID: ResidualID(id, e, c), Epoch: e, Counter: c, Weight: rapid.Uint64Min(1).Draw(t, "weight"),
			Descriptor: genBytes().Draw(t, "residual descriptor")}
	})
}

// genAssignment draws an assignment with sorted, distinct split ids.
func genAssignment() *rapid.Generator[AssignmentRecord] {
	return rapid.Custom(func(t *rapid.T) AssignmentRecord {
		ids := rapid.SliceOfNDistinct(genSplitID(), 0, 20, func(id coordination.SplitID) coordination.SplitID { return id }).Draw(t, "splits")
		if len(ids) == 0 {
			ids = nil
		}
		slices.Sort(ids)
		r := AssignmentRecord{Generation: rapid.Uint64().Draw(t, "generation"), Splits: ids}
		for _, id := range ids { // cut requests for some of the assigned splits
			if rapid.Float64Range(0, 1).Draw(t, "cut requested") < 0.1 {
				c := CutRequest{Split: id, Epoch: rapid.Uint64Min(1).Draw(t, "epoch"),
					Counter: rapid.Uint64Min(1).Draw(t, "counter"), KeepPPM: rapid.Uint32Range(KeepPPMHalf, keepPPMMax).Draw(t, "keep"), Parts: 1}
				if parts := rapid.Uint32Range(1, 40).Draw(t, "parts"); parts > 1 {
					c.Parts, c.KeepPPM = parts, EqualKeepPPM(parts)
				}
				r.Cuts = append(r.Cuts, c)
			}
		}
		return r
	})
}

func genLeader() *rapid.Generator[LeaderRecord] {
	return rapid.Custom(func(t *rapid.T) LeaderRecord {
		return LeaderRecord{Owner: genName().Draw(t, "owner"), Nonce: genName().Draw(t, "nonce"), Generation: rapid.Uint64().Draw(t, "generation")}
	})
}

func genPresence() *rapid.Generator[PresenceRecord] {
	return rapid.Custom(func(t *rapid.T) PresenceRecord {
		r := PresenceRecord{Nonce: genName().Draw(t, "nonce"), MaxInFlight: rapid.Uint32().Draw(t, "max_in_flight")}
		if rapid.Bool().Draw(t, "estimates") {
			r.Remaining = LargestEstimates(rapid.SliceOfN(genEstimate(), 0, 6).Draw(t, "remaining"))
		}
		return r
	})
}

// genSplitProgress draws a progress a source may commit.
func genSplitProgress() *rapid.Generator[coordination.SplitProgress] {
	return rapid.Custom(func(t *rapid.T) coordination.SplitProgress {
		return coordination.SplitProgress{
			Watermark: rapid.Int64().Draw(t, "watermark"),
			State:     genNullBytes().Draw(t, "state"),
			Completed: rapid.Bool().Draw(t, "completed"),
		}
	})
}

// Candidate inputs draw from a small world so that every row of the "Claim
// candidates" table of docs/protocol.md is hit often: this worker "me" with
// session nonce "mine", a peer "peer" with session "theirs", and an earlier
// session's nonce "old".
const (
	genMe      = "me"
	genMyNonce = "mine"
)

// genCandidateInput draws the view of one split as Classify sees it: a valid
// split record (owner and nonce null together) and the owner's live session
// in the view, if any.
func genCandidateInput() *rapid.Generator[CandidateInput] {
	return rapid.Custom(func(t *rapid.T) CandidateInput {
		r := SplitRecord{
			ID:       genSplitID().Draw(t, "id"),
			FP:       testFP,
			Epoch:    rapid.OneOf(rapid.Just[uint64](0), rapid.Uint64Range(1, 5), rapid.Uint64()).Draw(t, "epoch"),
			Status:   genStatus().Draw(t, "status"),
			Owner:    rapid.SampledFrom([]string{"", genMe, "peer"}).Draw(t, "owner"),
			Attempts: rapid.OneOf(rapid.Uint32Range(0, 6), rapid.Uint32()).Draw(t, "attempts"),
		}
		if r.Owner != "" {
			r.Nonce = rapid.SampledFrom([]string{genMyNonce, "old", "theirs"}).Draw(t, "nonce")
		}
		return CandidateInput{
			Record:       r,
			OwnerSession: rapid.SampledFrom([]string{"", genMyNonce, "old", "theirs"}).Draw(t, "owner_session"),
			Held:         rapid.Bool().Draw(t, "held"),
			Me:           genMe,
			MyNonce:      genMyNonce,
			MaxAttempts:  rapid.OneOf(rapid.Uint32Range(1, 6), rapid.Uint32()).Draw(t, "max_attempts"),
		}
	})
}

// genEstimate draws an estimate an owner may report (Remaining 0 means
// none: LargestEstimates drops it); split ids from a small set, so that one
// split is often listed twice.
func genEstimate() *rapid.Generator[Estimate] {
	return rapid.Custom(func(t *rapid.T) Estimate {
		return Estimate{Split: rapid.OneOf(rapid.SampledFrom([]coordination.SplitID{"a", "b", "c"}), genSplitID()).Draw(t, "split"),
			Epoch: rapid.Uint64Min(1).Draw(t, "epoch"), Remaining: rapid.OneOf(rapid.Uint64Range(0, 3), rapid.Uint64()).Draw(t, "remaining")}
	})
}
