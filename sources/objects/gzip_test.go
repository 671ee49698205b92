package objects_test

import (
	"context"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/sources/objects"
)

// TestCompressedObjectsAreNeverCut: a lane of a .gz object refuses every
// runtime cut while it reads, a lane of a plain object of the same bytes
// accepts one, and the compressed lane's records carry decompressed
// offsets.
func TestCompressedObjectsAreNeverCut(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	content := genFile(5, 50_000, 60)
	if err := b.WriteAll(ctx, "in/a.ndjson.gz", gz(content), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "in/b.ndjson", content, nil); err != nil {
		t.Fatal(err)
	}
	p, err := objects.NewPlanner(objects.PlannerConfig{Bucket: b, Name: "mem", Prefix: "in/", SplitBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := p.Plan(ctx, coordination.PlanContext{})
	if err != nil || len(sp.Splits) != 2 {
		t.Fatalf("plan: %d splits, err %v; want one per object", len(sp.Splits), err)
	}
	for i, want := range []bool{false, true} { // the listing order: a.ndjson.gz, b.ndjson
		spec := sp.Splits[i].Spec
		first := make(chan objects.Record, 1)
		release := make(chan struct{})
		src := objects.NewSource(b, func(ctx context.Context, r objects.Record) error {
			select {
			case first <- objects.Record{Key: r.Key, Offset: r.Offset, Line: append([]byte(nil), r.Line...)}:
				<-release // hold the lane mid-read
			default:
			}
			return nil
		}, objects.Options{})
		if err := src.OpenSplit(driver.Opening{Split: spec, Lane: 1, Partition: 1, Waker: coordination.NewWaker()}); err != nil {
			t.Fatal(err)
		}
		src.StartLanes([]driver.Lane{{ID: 1, Partition: 1, Split: spec}})
		r := <-first
		if r.Offset != 0 || string(r.Line) != string(content[:len(r.Line)]) {
			t.Errorf("%s: first record %q at %d, want the file's first line at 0", spec.ID, r.Line, r.Offset)
		}
		_, ok, err := src.TrySplit(1, 0.5)
		if err != nil || ok != want {
			t.Errorf("%s (%s): TrySplit ok = %v (err %v), want %v", spec.ID, r.Key, ok, err, want)
		}
		close(release)
		src.StopLanes([]driver.LaneID{1})
		src.CloseSplit(spec.ID)
	}
}
