package objects

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/lanes"
)

// coverage checks that splits plan every non-empty object of objs exactly
// once: a compressed object alone in one split, any other covered byte for
// byte by single-object ranges or whole in a group, with no overlap.
func coverage(t interface{ Fatalf(string, ...any) }, objs map[string]int64, specs []coordination.SplitSpec) {
	ranges := map[string][][2]int64{}
	for _, spec := range specs {
		s, err := lanes.SplitOf[int64](spec)
		if err != nil {
			t.Fatalf("%v", err)
		}
		m, err := decodeMeta(s.Meta)
		if err != nil {
			t.Fatalf("split %s: %v", s.ID, err)
		}
		switch {
		case m.gzip:
			o := m.objects[0]
			if !strings.HasSuffix(o.key, ".gz") || s.Range != (lanes.Range[int64]{Start: 0, End: gzipSpan}) || s.Weight != uint64(o.size) {
				t.Fatalf("split %s: compressed split of %q has range %v weight %d", s.ID, o.key, s.Range, s.Weight)
			}
			ranges[o.key] = append(ranges[o.key], [2]int64{0, o.size})
		case len(m.objects) == 1 && s.Range.End <= m.objects[0].size:
			ranges[m.objects[0].key] = append(ranges[m.objects[0].key], [2]int64{s.Range.Start, s.Range.End})
		default:
			if s.Range != (lanes.Range[int64]{Start: 0, End: m.total()}) || s.Weight != uint64(m.total()) {
				t.Fatalf("split %s: a group of %d objects (%d bytes) has range %v weight %d", s.ID, len(m.objects), m.total(), s.Range, s.Weight)
			}
			for _, o := range m.objects {
				ranges[o.key] = append(ranges[o.key], [2]int64{0, o.size})
			}
		}
	}
	for key, size := range objs {
		rs := ranges[key]
		delete(ranges, key)
		if size == 0 {
			if len(rs) != 0 {
				t.Fatalf("empty object %q planned %d times", key, len(rs))
			}
			continue
		}
		slices.SortFunc(rs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		at := int64(0)
		for _, r := range rs {
			if r[0] != at {
				t.Fatalf("object %q (%d bytes): ranges %v do not tile it once", key, size, rs)
			}
			at = r[1]
		}
		if at != size {
			t.Fatalf("object %q (%d bytes): ranges %v do not tile it once", key, size, rs)
		}
	}
	for key := range ranges {
		t.Fatalf("planned %q, which is not in the bucket", key)
	}
}

// TestPropertyPlanPageTilesEveryObjectOnce: whatever the sizes, a page's
// splits tile each non-empty object once; groups stay within SplitBytes
// and MaxGroup, ranges of a large object within about SplitBytes, and a
// page planned again gives the same splits.
func TestPropertyPlanPageTilesEveryObjectOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		splitBytes := rapid.Int64Range(1, 5000).Draw(t, "splitBytes")
		maxGroup := rapid.IntRange(1, 20).Draw(t, "maxGroup")
		n := rapid.IntRange(0, 60).Draw(t, "objects")
		objs := map[string]int64{}
		var page []*blob.ListObject
		for i := range n {
			key := fmt.Sprintf("k%03d", i)
			if rapid.IntRange(0, 5).Draw(t, "gz?") == 0 {
				key += ".gz"
			}
			size := rapid.Int64Range(0, 3*splitBytes).Draw(t, "size")
			objs[key] = size
			page = append(page, &blob.ListObject{Key: key, Size: size, ModTime: time.Unix(1, int64(i)), MD5: []byte{byte(i)}})
		}
		splits, err := planPage(7, page, splitBytes, maxGroup)
		if err != nil {
			t.Fatal(err)
		}
		var specs []coordination.SplitSpec
		for i, s := range splits {
			if want := coordination.SplitID(fmt.Sprintf("p000007-%d", i)); s.ID != want {
				t.Fatalf("split %d is named %s, want %s", i, s.ID, want)
			}
			m, _ := decodeMeta(s.Meta)
			if !m.gzip && len(m.objects) > 1 && (len(m.objects) > maxGroup || m.total() > splitBytes) {
				t.Fatalf("split %s groups %d objects of %d bytes (SplitBytes %d, MaxGroup %d)", s.ID, len(m.objects), m.total(), splitBytes, maxGroup)
			}
			if !m.gzip && len(m.objects) == 1 && s.Range.End-s.Range.Start > splitBytes && m.objects[0].size >= splitBytes {
				t.Fatalf("split %s of a large object spans %v, more than %d bytes", s.ID, s.Range, splitBytes)
			}
			spec, err := s.Spec()
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, spec)
		}
		coverage(t, objs, specs)
		again, _ := planPage(7, page, splitBytes, maxGroup)
		if !slices.EqualFunc(splits, again, func(a, b lanes.Split[int64]) bool {
			return a.ID == b.ID && a.Range == b.Range && a.Weight == b.Weight && string(a.Meta) == string(b.Meta)
		}) {
			t.Fatal("a page planned twice gave different splits")
		}
	})
}

// TestPlannerResumesAtItsCursor lists 2,500 objects in pages of 1,000, one
// page per run: the plan is open until the third run, which is final;
// running again from a stored cursor (a new leader) gives the same splits;
// together the runs tile every object once; a final cursor plans nothing
// more.
func TestPlannerResumesAtItsCursor(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	objs := map[string]int64{}
	for i := range 2500 {
		key := fmt.Sprintf("in/%05d.ndjson", i)
		body := strings.Repeat("x\n", i%7)
		objs[key] = int64(len(body))
		if err := b.WriteAll(ctx, key, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.WriteAll(ctx, "other/skip.ndjson", []byte("x\n"), nil); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlanner(PlannerConfig{Bucket: b, Name: "mem://", Prefix: "in/", PagesPerRun: 1, SplitBytes: 20, MaxGroup: 3})
	if err != nil {
		t.Fatal(err)
	}
	var state []byte
	var specs []coordination.SplitSpec
	for run := range 3 {
		sp, err := p.Plan(ctx, coordination.PlanContext{PlannerState: state})
		if err != nil {
			t.Fatal(err)
		}
		if want := coordination.PlanFinality(map[bool]coordination.PlanFinality{true: coordination.PlanFinal, false: coordination.PlanOpen}[run == 2]); sp.Finality != want {
			t.Fatalf("run %d: finality %v, want %v", run, sp.Finality, want)
		}
		again, err := p.Plan(ctx, coordination.PlanContext{PlannerState: state})
		if err != nil || !slices.EqualFunc(sp.Splits, again.Splits, func(a, b coordination.PlannedSplit) bool {
			return a.Spec.ID == b.Spec.ID && string(a.Spec.Descriptor) == string(b.Spec.Descriptor)
		}) {
			t.Fatalf("run %d from the same cursor planned other splits (err %v)", run, err)
		}
		for _, s := range sp.Splits {
			specs = append(specs, s.Spec)
		}
		state = sp.PlannerState
	}
	coverage(t, objs, specs)
	sp, err := p.Plan(ctx, coordination.PlanContext{PlannerState: state})
	if err != nil || len(sp.Splits) != 0 || sp.Finality != coordination.PlanFinal {
		t.Fatalf("a run after the listing ended: %d splits, finality %v, err %v; want none, final", len(sp.Splits), sp.Finality, err)
	}
}

// TestNewPlannerRefusesBadConfig names the field to fix.
func TestNewPlannerRefusesBadConfig(t *testing.T) {
	b := memblob.OpenBucket(nil)
	defer b.Close()
	for _, c := range []struct {
		cfg  PlannerConfig
		want string
	}{
		{PlannerConfig{Name: "x"}, "PlannerConfig.Bucket is nil"},
		{PlannerConfig{Bucket: b}, "PlannerConfig.Name is empty"},
		{PlannerConfig{Bucket: b, Name: "x", SplitBytes: -1}, "negative"},
	} {
		if _, err := NewPlanner(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewPlanner(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	if _, err := (&Planner{cfg: PlannerConfig{Bucket: b, PagesPerRun: 1, PageSize: 1}}).Plan(context.Background(), coordination.PlanContext{PlannerState: []byte("junk")}); coordination.KindOf(err) != coordination.Fatal {
		t.Errorf("a foreign planner state: err %v, want Fatal", err)
	}
}
