package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// URLs
	_ "gocloud.dev/blob/memblob"  // mem:// URLs
	_ "gocloud.dev/blob/s3blob"   // s3:// URLs

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/objects"
	"github.com/spate-go/coordination/store/memstore"
)

// run runs the job and prints its report to out; it returns the exit
// status: 0 when every line was delivered exactly once.
func run(ctx context.Context, c config, out io.Writer) int {
	url := c.bucket
	if url == "" {
		dir, err := os.MkdirTemp("", "spate-bucket-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bucket:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := generate(dir, c.files, c.bytes); err != nil {
			fmt.Fprintln(os.Stderr, "bucket: generating the files:", err)
			return 1
		}
		url = "file://" + filepath.ToSlash(dir)
	}
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bucket: opening %s: %v\n", url, err)
		return 1
	}
	defer b.Close()
	planner, err := objects.NewPlanner(objects.PlannerConfig{Bucket: b, Name: url, Prefix: c.prefix, SplitBytes: c.splitBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bucket:", err)
		return 1
	}

	log := c.logger()
	cfg := coordination.DefaultConfig()
	cfg.Logger = log
	cfg.StartupGrace = time.Second // the workers start together
	st := memstore.New(cfg.LeaseDuration)
	defer st.Close()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bucket:", err)
		return 1
	}
	t := newTally(c.workers)
	start := time.Now()
	errs := make([]error, c.workers)
	var wg sync.WaitGroup
	for i := range c.workers {
		wcfg := cfg
		wcfg.InstanceID = fmt.Sprintf("worker-%d", i+1)
		coord, err := actors.Spawn(e, st, wcfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bucket:", err)
			return 1
		}
		src := objects.NewSource(b, func(_ context.Context, r objects.Record) error {
			t.add(i, r.Key, r.Offset)
			return nil
		}, objects.Options{Lanes: lanes.Options{Logger: log}})
		wg.Go(func() {
			errs[i] = driver.Run(ctx, coord, src, driver.WithPlanner(planner), driver.WithLogger(log))
		})
	}
	wg.Wait()
	took := time.Since(start)
	status := 0
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(out, "worker-%d: %v\n", i+1, err)
			status = 1
		}
	}

	want, err := expected(ctx, b, c.prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bucket: counting the bucket's lines:", err)
		return 1
	}
	r := t.check(want)
	fmt.Fprintf(out, "bucket:     %s (prefix %q)\n", url, c.prefix)
	fmt.Fprintf(out, "objects:    %d, %d bytes\n", len(want.lines), want.bytes)
	fmt.Fprintf(out, "lines:      %d\n", r.lines)
	fmt.Fprintf(out, "delivered:  %d in %v (%.0f lines/s)\n", r.delivered, took.Round(time.Millisecond), float64(r.delivered)/took.Seconds())
	fmt.Fprintf(out, "by worker:  %v\n", t.byWorker)
	fmt.Fprintf(out, "missing:    %d\n", r.missing)
	fmt.Fprintf(out, "duplicates: %d\n", r.duplicates)
	if r.missing != 0 || r.duplicates != 0 || r.unknown != 0 {
		fmt.Fprintf(out, "FAILED: %s\n", r.example)
		status = 1
	}
	return status
}
