package objects

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/testkit"
)

// TestOpenListingSurvivesTheLeadersCrash lists 20,000 objects in pages of
// 1,000, one page per planner run, in a fleet of three; the leader is
// crashed mid-listing (the plan open, some pages seeded). A new leader
// resumes at the stored cursor, the plan turns final, and the spec records
// in the store tile every object exactly once.
func TestOpenListingSurvivesTheLeadersCrash(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	objs := map[string]int64{}
	for i := range 20_000 {
		key := fmt.Sprintf("day=%02d/part-%05d.ndjson", i/1000, i)
		if i%997 == 0 {
			key += ".gz"
		}
		body := strings.Repeat("{}\n", (i*7919)%13)
		if i%501 == 0 {
			body = strings.Repeat("{}\n", 333) // ranges of one object
		}
		objs[key] = int64(len(body))
		if err := b.WriteAll(ctx, key, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := NewPlanner(PlannerConfig{Bucket: b, Name: "mem://listing", PageSize: 1000, PagesPerRun: 1, SplitBytes: 400, MaxGroup: 40})
	if err != nil {
		t.Fatal(err)
	}
	testkit.RunFleet(t, func(t *testing.T, f *testkit.Fleet) {
		for _, id := range []string{"w1", "w2", "w3"} {
			f.Start(id, p)
		}
		f.Until("four pages planned", func() bool { return pagesPlanned(f) >= 4 })
		pr, _ := f.Plan()
		if pr.Finality != coordination.PlanOpen {
			t.Fatalf("the plan is %v after %d pages; the crash must land mid-listing", pr.Finality, pagesPlanned(f))
		}
		leader := f.Leader()
		crashedAt := pagesPlanned(f)
		f.Crash(leader)
		f.Until("the plan is final", func() bool {
			pr, ok := f.Plan()
			return ok && pr.Finality == coordination.PlanFinal
		})
		if nl := f.Leader(); nl == leader || nl == "" {
			t.Fatalf("leader after the crash = %q, want another member than %s", nl, leader)
		}
		specs := storedSpecs(t, f)
		coverage(t, objs, specs)
		t.Logf("leader %s crashed after %d of 20 pages; %d splits planned", leader, crashedAt, len(specs))
	}, testkit.WithUntilBudget(2*time.Minute))
}

// pagesPlanned returns the listing pages the stored cursor is past.
func pagesPlanned(f *testkit.Fleet) int {
	e, ok, err := f.Store().Get(context.Background(), store.Durable, protocol.KeyPlan)
	if err != nil || !ok {
		return 0
	}
	pr, err := protocol.DecodePlan(protocol.KeyPlan, e.Value)
	if err != nil {
		return 0
	}
	c, err := decodeCursor(pr.PlannerState)
	if err != nil {
		return 0
	}
	return c.page
}

// storedSpecs returns every spec record of the fleet's store.
func storedSpecs(t *testing.T, f *testkit.Fleet) []coordination.SplitSpec {
	t.Helper()
	pr, _ := f.Plan()
	es, err := f.Store().List(context.Background(), store.Durable, protocol.PrefixSpec)
	if err != nil {
		t.Fatal(err)
	}
	var specs []coordination.SplitSpec
	for _, e := range es {
		r, err := protocol.DecodeSpec(e.Key, e.Value, protocol.Fingerprint(pr.Fingerprint))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, coordination.SplitSpec{ID: r.ID, Descriptor: r.Descriptor, Weight: r.Weight})
	}
	return specs
}
