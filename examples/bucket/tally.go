package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"gocloud.dev/blob"
)

// tally counts the deliveries of each line (object key and offset).
type tally struct {
	mu       sync.Mutex
	seen     map[string]map[int64]int
	byWorker []int
}

func newTally(workers int) *tally {
	return &tally{seen: map[string]map[int64]int{}, byWorker: make([]int, workers)}
}

// add counts a delivery of key's line at off by worker w.
func (t *tally) add(w int, key string, off int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.seen[key]
	if m == nil {
		m = map[int64]int{}
		t.seen[key] = m
	}
	m[off]++
	t.byWorker[w]++
}

// lines is what the bucket holds: each object's line offsets.
type lines struct {
	lines map[string][]int64
	bytes int64
}

// expected reads every object under prefix (gunzipping .gz ones) and
// returns its line offsets, by the rule sources/objects reads them: a line
// starts at 0 and after every '\n', except at the object's end.
func expected(ctx context.Context, b *blob.Bucket, prefix string) (lines, error) {
	want := lines{lines: map[string][]int64{}}
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return want, nil
		}
		if err != nil {
			return want, err
		}
		if o.IsDir {
			continue
		}
		want.bytes += o.Size
		offs, err := lineOffsets(ctx, b, o.Key)
		if err != nil {
			return want, fmt.Errorf("%s: %w", o.Key, err)
		}
		want.lines[o.Key] = offs
	}
}

// lineOffsets returns the offsets of key's lines.
func lineOffsets(ctx context.Context, b *blob.Bucket, key string) ([]int64, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var in io.Reader = r
	if strings.HasSuffix(key, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		in = zr
	}
	br := bufio.NewReaderSize(in, 1<<20)
	var offs []int64
	var at int64
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			offs = append(offs, at)
			at += int64(len(chunk))
		}
		for errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer
			chunk, err = br.ReadSlice('\n')
			at += int64(len(chunk))
		}
		if errors.Is(err, io.EOF) {
			return offs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// result is what check found.
type result struct {
	lines, delivered, missing, duplicates, unknown int
	example                                        string
}

// check compares the deliveries with want.
func (t *tally) check(want lines) result {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r result
	note := func(format string, args ...any) {
		if r.example == "" {
			r.example = fmt.Sprintf(format, args...)
		}
	}
	for key, offs := range want.lines {
		seen := t.seen[key]
		r.lines += len(offs)
		for _, off := range offs {
			switch n := seen[off]; {
			case n == 0:
				r.missing++
				note("%s: the line at %d was never delivered", key, off)
			case n > 1:
				r.duplicates += n - 1
				note("%s: the line at %d was delivered %d times", key, off, n)
			}
		}
	}
	for key, seen := range t.seen {
		valid := map[int64]bool{}
		for _, off := range want.lines[key] {
			valid[off] = true
		}
		for off, n := range seen {
			r.delivered += n
			if !valid[off] {
				r.unknown++
				note("%s: a line was delivered at %d, where none starts", key, off)
			}
		}
	}
	return r
}
