// Package bench compares the library's assignment function with
// franz-go's sticky group balancer on count-only input, and builds the inputs
// of the assignment benchmarks (100,000 splits over 1,000 members).
//
// It is a nested module so that franz-go never enters the library's go.mod.
// Go's internal-package rule is by import path, and this module's path,
// github.com/spate-go/coordination/bench, is rooted at the library's, so it
// imports internal/protocol directly; no public surface was added.
//
//	go test -run '^$' -bench . -benchmem ./...   (from bench/)
//	../scripts/bench-assignment.sh               (medians, one line per case)
//
// Count-only input: every weight is 1; franz-go sees one topic with n
// partitions and m members whose current ownership is carried in their sticky
// member metadata, exactly as a Kafka group leader receives it.
package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

// Topic is the single topic of the count-only franz-go input.
const Topic = "t"

// Joiner is the member id of the joining member in the join shapes.
const Joiner = "w-joiner"

// MemberID is the id of member i, shaped like the ids actors.Spawn
// generates ("spate-" and 32 hex digits), zero-padded so ids sort numerically.
func MemberID(i int) string { return fmt.Sprintf("spate-%032x", i) }

// SplitID is the id of split (partition) i.
func SplitID(i int) coordination.SplitID { return coordination.SplitID(fmt.Sprintf("s%07d", i)) }

// Weighted returns the benchmark input of the given shape ("unowned",
// "settled" or "join") with n splits of weight 1..100 (fixed pseudo-random)
// over m members; budgets never bind. The settled fleet is the unowned
// pool's assignment fed back until it is a fixpoint; join adds Joiner to it.
func Weighted(shape string, n, m int) protocol.AssignInput {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(m)))
	in := protocol.AssignInput{DefaultCap: 4*n/m + 1, FP: protocol.Fingerprint("bench")}
	for i := range m {
		in.Members = append(in.Members, MemberID(i))
	}
	in.Splits = make([]protocol.AssignSplit, n)
	for i := range in.Splits {
		in.Splits[i] = protocol.AssignSplit{ID: SplitID(i), Weight: 1 + rng.Uint64N(100), HasSpec: true}
	}
	return shaped(shape, in)
}

// CountOnly returns the count-only input of the given shape ("fresh" or
// "join"): n splits of weight 1 over m members, budgets that never bind.
// Fresh owns nothing; join is the settled fleet plus Joiner.
func CountOnly(shape string, n, m int) protocol.AssignInput {
	in := protocol.AssignInput{DefaultCap: n, FP: protocol.Fingerprint("bench")}
	for i := range m {
		in.Members = append(in.Members, MemberID(i))
	}
	in.Splits = make([]protocol.AssignSplit, n)
	for i := range in.Splits {
		in.Splits[i] = protocol.AssignSplit{ID: SplitID(i), Weight: 1, HasSpec: true}
	}
	if shape == "fresh" {
		return in
	}
	return shaped(shape, in)
}

// shaped turns an unowned input into the settled or join shape.
func shaped(shape string, in protocol.AssignInput) protocol.AssignInput {
	switch shape {
	case "unowned", "fresh":
		return in
	case "settled", "join":
	default:
		panic("bench: unknown shape " + shape)
	}
	out := protocol.Assign(in)
	for range 100 {
		in = FeedBack(in, out)
		next := protocol.Assign(in)
		if next.Moves == 0 {
			break
		}
		out = next
	}
	if shape == "join" {
		in.Members = append(in.Members, Joiner)
	}
	return in
}

// FeedBack returns in with every split owned by its assigned member.
func FeedBack(in protocol.AssignInput, out protocol.AssignOutput) protocol.AssignInput {
	at := make(map[coordination.SplitID]string, len(in.Splits))
	for m, ids := range out.Assigned {
		for _, id := range ids {
			at[id] = m
		}
	}
	next := in
	next.Splits = slices.Clone(in.Splits)
	for i := range next.Splits {
		next.Splits[i].Owner = at[next.Splits[i].ID]
	}
	return next
}

// Kafka is a count-only input as franz-go's group leader receives it.
type Kafka struct {
	// Members are the join-group members, sorted by id, each with sticky
	// metadata naming the partitions it currently owns.
	Members []kmsg.JoinGroupResponseMember
	// Topics maps the one topic to its partition count.
	Topics map[string]int32
}

// ToKafka translates a count-only input: split i is partition i of Topic.
func ToKafka(in protocol.AssignInput) Kafka {
	owned := make(map[string][]int32, len(in.Members))
	for i, s := range in.Splits {
		if s.Owner != "" {
			owned[s.Owner] = append(owned[s.Owner], int32(i))
		}
	}
	members := slices.Clone(in.Members)
	slices.Sort(members)
	bal := kgo.StickyBalancer()
	k := Kafka{Topics: map[string]int32{Topic: int32(len(in.Splits))}}
	for _, m := range members {
		var current map[string][]int32
		if p := owned[m]; len(p) > 0 {
			current = map[string][]int32{Topic: p}
		}
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m
		jm.ProtocolMetadata = bal.JoinGroupMetadata([]string{Topic}, current, 1)
		k.Members = append(k.Members, jm)
	}
	return k
}

// FranzGo runs franz-go's sticky balancer as a group leader does: parse the
// members' metadata (MemberBalancer) and balance. It returns the plan as
// member → partitions.
func FranzGo(k Kafka) (map[string][]int32, error) {
	b, err := franzBalancer(k)
	if err != nil {
		return nil, err
	}
	return FranzGoBalance(b, k)
}

// franzBalancer parses the members' metadata.
func franzBalancer(k Kafka) (kgo.GroupMemberBalancerOrError, error) {
	mb, _, err := kgo.StickyBalancer().MemberBalancer(k.Members)
	if err != nil {
		return nil, err
	}
	b, ok := mb.(kgo.GroupMemberBalancerOrError)
	if !ok {
		return nil, fmt.Errorf("bench: sticky member balancer is a %T", mb)
	}
	return b, nil
}

// FranzGoBalance runs only the balancing step on already parsed members
// (it still decodes each member's sticky user data, as franz-go does).
func FranzGoBalance(b kgo.GroupMemberBalancerOrError, k Kafka) (map[string][]int32, error) {
	plan, err := b.BalanceOrError(k.Topics)
	if err != nil {
		return nil, err
	}
	bp, ok := plan.(*kgo.BalancePlan)
	if !ok {
		return nil, fmt.Errorf("bench: sticky plan is a %T", plan)
	}
	out := make(map[string][]int32, len(k.Members))
	for m, topics := range bp.AsMemberIDMap() {
		out[m] = topics[Topic]
	}
	return out, nil
}
