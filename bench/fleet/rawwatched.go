package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spate-go/coordination/store"
)

// watchedRaw is the floor under a fleet's claims that the store itself
// sets when every worker watches every placement record
// (docs/protocol.md, "Keys"): the raw writes of runRaw, with watchers
// watching the keys the updates rewrite (as the workers watch the split
// records the claims rewrite; the creates, like the claims' progress
// records, go unwatched).
type watchedRaw struct {
	load   time.Duration // every watcher's snapshot of the updated keys delivered
	landed time.Duration // load, then the writes until the last one landed
	total  time.Duration // load, then the writes until every watcher saw every update
}

// runWatchedRaw prepares ws's updated keys (untimed), opens one watcher per
// store of sts on them and times, from the Watch calls, every snapshot
// delivered, then ws issued from conc goroutines until the last write
// landed, and until every watcher has seen every update. Keys are
// "rawwatch.<tag>.w.<i>" (updated, watched) and "rawwatch.<tag>.c.<i>"
// (created).
func runWatchedRaw(ctx context.Context, sts []store.Store, tag string, ws []rawWrite, conc int) (watchedRaw, error) {
	var out watchedRaw
	if len(sts) == 0 {
		return out, errors.New("watched raw baseline: no watcher stores")
	}
	st, prefix := sts[0], fmt.Sprintf("rawwatch.%s.w.", tag)
	key := func(i int) string {
		if ws[i].op == opUpdate {
			return fmt.Sprintf("%s%d", prefix, i)
		}
		return fmt.Sprintf("rawwatch.%s.c.%d", tag, i)
	}
	updates := 0
	for _, w := range ws {
		if w.op == opUpdate {
			updates++
		}
	}
	revs, err := prepareRaw(ctx, st, ws, conc, key)
	if err != nil {
		return out, err
	}

	start := time.Now()
	loaded := make(chan error, len(sts))
	seen := make(chan error, len(sts))
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, below
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, s := range sts {
		wg.Go(func() {
			w, err := s.Watch(wctx, store.Durable, prefix)
			if err != nil {
				loaded <- err
				return
			}
			defer w.Stop()
			live, inSnapshot := 0, true
			for ev := range w.Events() {
				switch {
				case ev.Kind == store.SnapshotDone:
					inSnapshot = false
					loaded <- nil
				case ev.Kind == store.Put && !inSnapshot && strings.HasPrefix(ev.Entry.Key, prefix):
					if live++; live == updates {
						seen <- nil
						return
					}
				}
			}
			err = fmt.Errorf("watched raw baseline: a watch ended early: %v", w.Err())
			if inSnapshot {
				loaded <- err
			} else {
				seen <- err
			}
		})
	}
	if err := collect(ctx, loaded, len(sts)); err != nil {
		return out, err
	}
	out.load = time.Since(start)
	if err := issueRaw(ctx, st, ws, conc, key, revs); err != nil {
		return out, err
	}
	out.landed = time.Since(start)
	if err := collect(ctx, seen, len(sts)); err != nil {
		return out, err
	}
	out.total = time.Since(start)
	return out, nil
}

// collect waits for n answers on ch and returns the first error.
func collect(ctx context.Context, ch <-chan error, n int) error {
	var first error
	for range n {
		select {
		case err := <-ch:
			if first == nil {
				first = err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}
