package objects

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/spate-go/coordination/lanes"
)

// Record is one record of an object, as a [Func] gets it.
type Record struct {
	// Key is the object's key.
	Key string
	// Offset is the byte offset of the record's first byte in the object
	// (in its decompressed bytes for a ".gz" object).
	Offset int64
	// Line is the record's bytes without its '\n'. It is valid only during
	// the call; copy it to keep it.
	Line []byte
}

// Func processes one record. A returned error retries the read from the
// last claimed batch (records may then be delivered again); an error
// wrapped by [lanes.Poison] fails the split at once.
type Func func(ctx context.Context, rec Record) error

// DefaultMaxLine is the longest record [Options.MaxLine] allows by default.
const DefaultMaxLine = 64 << 20

// Options tune [NewSource]; the zero value is the defaults.
type Options struct {
	// Lanes tunes the lane kit (retries, minimum residual, logger). Its
	// NoCut is the package's own: compressed objects are never cut.
	Lanes lanes.Options
	// MaxLine is the longest record in bytes; a longer one makes its split
	// poison, naming the object and offset. 0 means DefaultMaxLine.
	MaxLine int
}

// NewSource returns the source that reads the splits of a [Planner] from
// bucket, handing each record to fn; give it to driver.Run with the
// planner.
func NewSource(bucket *blob.Bucket, fn Func, opts Options) *lanes.Source[int64] {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	r := &reader{bucket: bucket, fn: fn, maxLine: opts.MaxLine}
	lo := opts.Lanes
	lo.NoCut = noCut
	return lanes.NewSource(r.read, lo)
}

// reader reads the lanes of one source.
type reader struct {
	bucket  *blob.Bucket
	fn      Func
	maxLine int
}

// read is the source's [lanes.ReadFunc]: it reads the split's objects
// from the lane's next position to its end under the record rule.
func (r *reader) read(ctx context.Context, lane *lanes.Lane[int64]) error {
	m, err := decodeMeta(lane.Meta())
	if err != nil {
		return lanes.Poison(fmt.Errorf("objects: split %s: %v", lane.Split(), err))
	}
	s := &scanner{buf: make([]byte, min(bufferBytes, r.maxLine)), max: r.maxLine, batch: maxBatch, fn: r.fn, lane: lane}
	if m.gzip {
		return r.readGzip(ctx, lane, s, m.objects[0])
	}
	next := lane.Next()
	var base int64
	for _, o := range m.objects {
		objEnd := base + o.size
		if objEnd <= next {
			base = objEnd
			continue
		}
		if base >= lane.End() {
			return nil
		}
		from := max(next-base, 0) // the first object offset this lane reads records from
		more, err := r.readObject(ctx, s, o, base, from)
		if err != nil || !more {
			return err
		}
		base = objEnd
	}
	return nil
}

// readObject reads object o, at base in the split's positions, from
// object offset from under the record rule: from 0, or after the first
// '\n' at or after from-1.
func (r *reader) readObject(ctx context.Context, s *scanner, o pin, base, from int64) (bool, error) {
	start := max(from-1, 0)
	rd, err := r.open(ctx, o, start)
	if err != nil {
		return false, err
	}
	defer rd.Close()
	more, err := s.readFrom(ctx, rd, o.key, base, from)
	return more, r.failure(o, err)
}

// readGzip reads compressed object o whole: records before the lane's next
// position (acknowledged by an earlier tenancy) are decompressed and
// skipped.
func (r *reader) readGzip(ctx context.Context, lane *lanes.Lane[int64], s *scanner, o pin) error {
	rd, err := r.open(ctx, o, 0)
	if err != nil {
		return err
	}
	defer rd.Close()
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return fmt.Errorf("objects: object %q: %w", o.key, err)
	}
	s.start(zr, o.key, 0, 0)
	_, err = s.records(ctx, lane.Next())
	return r.failure(o, err)
}

// failure makes a record too long poison; other errors are retried.
func (r *reader) failure(o pin, err error) error {
	if errors.Is(err, errLineTooLong) {
		return lanes.Poison(fmt.Errorf("objects: %w", err))
	}
	return err
}

// open opens o from offset off after checking it is the version the plan
// pinned: the object's current MD5 when the plan has one, then the size
// and modification time of the response that carries the bytes. A change
// or a deletion is poison.
func (r *reader) open(ctx context.Context, o pin, off int64) (*blob.Reader, error) {
	if len(o.md5) > 0 {
		a, err := r.bucket.Attributes(ctx, o.key)
		if err != nil {
			return nil, r.openError(o, err)
		}
		if diff := o.changed(a.Size, a.ModTime, a.MD5); diff != "" {
			return nil, changedError(o, diff)
		}
	}
	rd, err := r.bucket.NewRangeReader(ctx, o.key, off, -1, nil)
	if err != nil {
		return nil, r.openError(o, err)
	}
	if diff := o.changed(rd.Size(), rd.ModTime(), nil); diff != "" {
		rd.Close()
		return nil, changedError(o, diff)
	}
	return rd, nil
}

// openError makes a missing object poison and leaves other errors to be
// retried.
func (r *reader) openError(o pin, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return lanes.Poison(fmt.Errorf("objects: object %q was deleted since planning (it had %d bytes); replan the job under a new job name to read the prefix as it is now", o.key, o.size))
	}
	return fmt.Errorf("objects: object %q: %w", o.key, err)
}

// changedError is the poison of an object that changed since planning.
func changedError(o pin, diff string) error {
	return lanes.Poison(fmt.Errorf("objects: object %q changed since planning (%s); none of its new content was read: replan the job under a new job name to read the prefix as it is now", o.key, diff))
}
