package objects

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spate-go/coordination/lanes"
)

// bufferBytes is a lane's read buffer; a longer line grows it, up to
// Options.MaxLine.
const bufferBytes = 1 << 20

// maxBatch is the most records one claim covers: a drain or a runtime cut
// waits for the batch in hand, so it bounds their wait in records.
const maxBatch = 256

// scanner reads the records of one object's stream in batches and claims
// each batch's last position before handing the batch to the user: the
// record rule of the package doc, from a record boundary on.
type scanner struct {
	buf    []byte
	recs   []span // the batch in hand
	max    int    // Options.MaxLine
	batch  int    // the most records one claim covers: maxBatch
	fn     Func
	lane   claimer
	reader io.Reader
	key    string
	base   int64 // the object's first byte in the split's positions
	pos    int64 // object offset of buf[lo]
	lo, hi int   // unread bytes buf[lo:hi]
	eof    bool
}

// claimer is what a scanner needs of its lane ([lanes.Lane]).
type claimer interface {
	End() int64
	Claim(p int64) bool
}

var _ claimer = (*lanes.Lane[int64])(nil)

// start resets s to read stream rd of object key, at base in the split's
// positions, whose first byte is object offset pos; buffers are kept.
func (s *scanner) start(rd io.Reader, key string, base, pos int64) {
	*s = scanner{buf: s.buf, recs: s.recs[:0], max: s.max, batch: s.batch, fn: s.fn, lane: s.lane, reader: rd, key: key, base: base, pos: pos}
}

// readFrom reads the records of stream rd, object key's bytes from offset
// max(from-1, 0), whose records start at or after object offset from: the
// record rule. more is as [scanner.records] says.
func (s *scanner) readFrom(ctx context.Context, rd io.Reader, key string, base, from int64) (more bool, err error) {
	s.start(rd, key, base, max(from-1, 0))
	if from > 0 {
		found, err := s.skipLine()
		if err != nil || !found {
			return true, err
		}
	}
	return s.records(ctx, from)
}

// span is one record of a batch: its object offset and bytes buf[a:b].
type span struct {
	off  int64
	a, b int
}

// errLineTooLong is wrapped by the error of a record longer than MaxLine.
var errLineTooLong = errors.New("line too long")

// fill reads more of the stream into buf, moving the unread bytes to its
// front and growing it when they fill it; it sets eof at the stream's end.
func (s *scanner) fill() error {
	if s.lo > 0 && s.hi == len(s.buf) {
		n := copy(s.buf, s.buf[s.lo:s.hi])
		s.lo, s.hi = 0, n
	}
	if s.hi == len(s.buf) {
		if len(s.buf) >= s.max {
			return fmt.Errorf("object %q: the line at offset %d is longer than %d bytes (Options.MaxLine): %w", s.key, s.pos, s.max, errLineTooLong)
		}
		grown := make([]byte, min(2*len(s.buf), s.max))
		s.hi = copy(grown, s.buf[s.lo:s.hi])
		s.lo, s.buf = 0, grown
	}
	n, err := s.reader.Read(s.buf[s.hi:])
	s.hi += n
	switch {
	case errors.Is(err, io.EOF):
		s.eof = true
	case err != nil:
		return fmt.Errorf("object %q: reading at offset %d: %w", s.key, s.pos+int64(s.hi-s.lo), err)
	}
	return nil
}

// skipLine drops the bytes through the first '\n': the stream starts one
// byte before a range's start, and the first record at or after the start
// follows that newline. It returns false when the object ends first.
func (s *scanner) skipLine() (bool, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.lo:s.hi], '\n'); i >= 0 {
			s.pos += int64(i + 1)
			s.lo += i + 1
			return true, nil
		}
		s.pos += int64(s.hi - s.lo)
		s.lo, s.hi = 0, 0
		if s.eof {
			return false, nil
		}
		if err := s.fill(); err != nil {
			return false, err
		}
	}
}

// records hands every record starting at or after object offset from, and
// before the lane's end, to the user, in batches of at most maxBatch
// records claimed by their last position (so a drain or a cut waits for at
// most one batch). more is false once the lane's range is read or a claim
// failed (the read function then returns); true when the object ended
// first.
func (s *scanner) records(ctx context.Context, from int64) (more bool, err error) {
	full := false // the last batch stopped at maxBatch: buf holds more records
	for {
		if !s.eof && !full {
			if err := s.fill(); err != nil {
				return false, err
			}
		}
		end := s.lane.End() - s.base // the end in object offsets
		s.recs = s.recs[:0]
		past := false
		full = false
		i := s.lo
		for i < s.hi {
			if len(s.recs) == s.batch {
				full = true
				break
			}
			off := s.pos + int64(i-s.lo)
			if off >= end {
				past = true
				break
			}
			j := bytes.IndexByte(s.buf[i:s.hi], '\n')
			if j < 0 {
				if !s.eof {
					break // the record goes on past the buffer
				}
				j = s.hi - i // the last line, with no newline
			}
			if off >= from {
				s.recs = append(s.recs, span{off: off, a: i, b: i + j})
			}
			i += j + 1
		}
		i = min(i, s.hi)
		if len(s.recs) > 0 {
			if !s.lane.Claim(s.base + s.recs[len(s.recs)-1].off) {
				return false, nil
			}
			for _, r := range s.recs {
				if err := s.fn(ctx, Record{Key: s.key, Offset: r.off, Line: s.buf[r.a:r.b]}); err != nil {
					return false, err
				}
			}
		}
		s.pos += int64(i - s.lo)
		s.lo = i
		if past {
			return false, nil
		}
		if s.eof && s.lo == s.hi {
			return true, nil
		}
	}
}
