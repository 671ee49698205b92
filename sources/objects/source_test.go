package objects_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/rapidchecks"
	"github.com/spate-go/coordination/sources/objects"
)

// jobChecks is how many jobs TestPropertyBucketJobDeliversEveryLine runs
// unless -rapid.checks or RAPID_CHECKS says: fewer under the race detector,
// which makes each about ten times slower.
var jobChecks = map[bool]int{false: 16, true: 5}[raceEnabled]

// TestPropertyBucketJobDeliversEveryLine runs whole jobs: random files
// (empty lines, a last line with or without its newline, 0 bytes to 3 MiB,
// some gzipped) in a fileblob or memblob bucket, random split sizes, page
// sizes and group bounds, one to four workers joining at random times (the
// leader moves splits to the late ones: revocations, and cuts splits for
// their idle lanes: runtime splits), and sometimes a worker crashed mid-job
// and replaced. The delivered records are exactly the files' lines, each
// once, with no crash; each at least once with one; never a poison.
func TestPropertyBucketJobDeliversEveryLine(t *testing.T) {
	rapidchecks.Default(t, jobChecks)
	cutsMade.Store(0)
	drainsBegun.Store(0)
	jobs := 0
	defer func() {
		t.Logf("%d jobs: %d runtime cuts, %d drains", jobs, cutsMade.Load(), drainsBegun.Load())
		// Under -race only 5 jobs run, too few to be sure of both: the
		// check is made on the 16 of an ordinary run.
		if !raceEnabled && jobs >= jobChecks && !t.Failed() && (cutsMade.Load() == 0 || drainsBegun.Load() == 0) {
			t.Errorf("%d jobs made %d runtime cuts and %d drains; the property must exercise both", jobs, cutsMade.Load(), drainsBegun.Load())
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		jobs++
		file := rapid.Bool().Draw(rt, "fileblob")
		b, closeBucket := openBucket(t, file)
		defer closeBucket()
		want := map[string][]byte{}
		for i := range rapid.IntRange(1, 6).Draw(rt, "files") {
			size := rapid.SampledFrom([]int{0, 1, 40, 700, 5000, 60_000, 250_000}).Draw(rt, "size")
			if rapid.IntRange(0, 15).Draw(rt, "big?") == 0 {
				size = 3 << 20
			}
			content := genFile(rapid.Uint64().Draw(rt, "seed"), size, rapid.IntRange(0, 400).Draw(rt, "maxLine"))
			key, body := fmt.Sprintf("in/f%02d.ndjson", i), content
			if rapid.IntRange(0, 4).Draw(rt, "gz?") == 0 {
				key, body = key+".gz", gz(content)
			}
			if err := b.WriteAll(context.Background(), key, body, nil); err != nil {
				rt.Fatal(err)
			}
			want[key] = content
		}
		if err := b.WriteAll(context.Background(), "out/not-read.ndjson", []byte("x\n"), nil); err != nil {
			rt.Fatal(err)
		}
		total := 0
		for _, c := range want {
			total += len(c)
		}
		p, err := objects.NewPlanner(objects.PlannerConfig{
			Bucket: b, Name: "test", Prefix: "in/",
			PageSize:    rapid.IntRange(1, 8).Draw(rt, "pageSize"),
			PagesPerRun: rapid.IntRange(1, 3).Draw(rt, "pagesPerRun"),
			SplitBytes:  max(rapid.Int64Range(100, 4<<20).Draw(rt, "splitBytes"), int64(total/150)), // at most about 150 splits
			MaxGroup:    rapid.IntRange(1, 5).Draw(rt, "maxGroup"),
		})
		if err != nil {
			rt.Fatal(err)
		}
		workers := rapid.IntRange(1, 4).Draw(rt, "workers")
		var stagger []time.Duration
		for range workers {
			stagger = append(stagger, time.Duration(rapid.IntRange(0, 400).Draw(rt, "stagger ms"))*time.Millisecond)
		}
		inFlight := rapid.IntRange(1, 4).Draw(rt, "maxInFlight")
		crash := rapid.IntRange(0, 2).Draw(rt, "crash?") == 0
		crashAfter := time.Duration(rapid.IntRange(0, 300).Draw(rt, "crash after ms")) * time.Millisecond

		led := newLedger()
		var bad []string
		var poisons []string
		synctest.Test(t, func(t *testing.T) {
			f := newFleet(t, b, p, led, objects.Options{}, func(c *coordination.Config) { c.MaxInFlight = inFlight })
			for i, d := range stagger {
				f.start(fmt.Sprintf("w%d", i+1))
				time.Sleep(d)
			}
			if crash {
				time.Sleep(crashAfter)
				f.crash("w1")
				f.start("w1-again")
			}
			bad = f.wait()
			poisons = f.poisons
		})
		if len(bad) > 0 || len(poisons) > 0 {
			rt.Fatalf("outcomes: %s; poison: %s", strings.Join(bad, "; "), strings.Join(poisons, "; "))
		}
		if problems, dups := led.check(want, crash); problems != "" {
			rt.Fatalf("crash %v, %d duplicates:\n%s", crash, dups, problems)
		}
	})
}

// TestRewrittenObjectIsPoisonNeverMixed rewrites an object mid-job, after
// its first record is delivered, while its other ranges wait (one lane at
// a time): its split is poison with an error naming the object and what
// changed, the job stalls on it, and no line of the new version is ever
// delivered. Both bucket kinds.
func TestRewrittenObjectIsPoisonNeverMixed(t *testing.T) {
	for _, file := range []bool{false, true} {
		t.Run(map[bool]string{false: "memblob", true: "fileblob"}[file], func(t *testing.T) {
			b, closeBucket := openBucket(t, file)
			defer closeBucket()
			old := genFile(1, 200_000, 80)
			if err := b.WriteAll(context.Background(), "in/a.ndjson", old, nil); err != nil {
				t.Fatal(err)
			}
			p, err := objects.NewPlanner(objects.PlannerConfig{Bucket: b, Name: "test", Prefix: "in/", SplitBytes: 20_000})
			if err != nil {
				t.Fatal(err)
			}
			// the new version: other lines, the same size
			fresh := []byte(strings.Repeat("new line\n", len(old)/9) + strings.Repeat("x", len(old)%9))
			led := newLedger()
			var bad, poisons []string
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, b, p, led, objects.Options{}, func(c *coordination.Config) { c.MaxInFlight = 1 })
				var once sync.Once
				f.fn = func(ctx context.Context, r objects.Record) error {
					var err error
					once.Do(func() {
						time.Sleep(time.Millisecond) // a later modification time
						err = b.WriteAll(context.Background(), r.Key, fresh, nil)
					})
					if err != nil {
						return err
					}
					return led.deliver(ctx, r)
				}
				f.start("w1")
				bad = f.wait()
				poisons = f.poisons
			})
			if len(bad) != 1 || !strings.Contains(bad[0], "job stalled") {
				t.Errorf("outcomes %q, want the job stalled on the poison split", bad)
			}
			if len(poisons) == 0 {
				t.Fatal("no split was reported poison")
			}
			for _, reason := range poisons {
				if !strings.Contains(reason, `object "in/a.ndjson" changed since planning (`) || !strings.Contains(reason, "modified") {
					t.Errorf("poison reason %q does not name the object and what changed", reason)
				}
			}
			t.Logf("poison: %s", poisons[0])
			led.mu.Lock()
			defer led.mu.Unlock()
			if len(led.count) == 0 {
				t.Fatal("nothing was delivered")
			}
			for d, text := range led.text {
				if strings.HasPrefix(text, "new line") || int(d.off) >= len(old) || !strings.HasPrefix(string(old[d.off:]), text) {
					t.Errorf("delivered %s@%d %q, which is not the old version's line there", d.key, d.off, text)
				}
			}
		})
	}
}
