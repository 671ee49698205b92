package lanes

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/spate-go/coordination"
)

// Position is what a lane's records are ordered by: an int64 offset (a row
// number, a byte offset, a sequence number) or a byte-string key (compared
// bytewise, as bytes.Compare does: a primary key, an object name). Positions
// may be sparse: a lane claims them in increasing order, with any gaps.
type Position interface{ int64 | []byte }

// kind is what the kit needs of a position type. offsets and keys are its
// two implementations; kindOf picks one for P.
type kind[P Position] interface {
	// name is the kind's name in messages: "offset" or "key".
	name() string
	// show formats a position for messages.
	show(p P) string
	// code is the kind's byte in descriptors.
	code() byte
	// less reports a < b.
	less(a, b P) bool
	// beforeEnd reports p < end, where an empty key end means unbounded.
	beforeEnd(p, end P) bool
	// after returns the smallest position greater than p.
	after(p P) P
	// assign returns src stored in dst's memory (dst may be reused).
	assign(dst, src P) P
	// fraction returns where p lies in [start, end), from 0 to 1.
	fraction(start, p, end P) float64
	// between returns a position s with lo < s < end, about share of the way
	// from lo to end, or false when none is distinguishable.
	between(lo, end P, share float64) (P, bool)
	// span reports whether [lo, end) holds at least n positions (always
	// true for keys, whose ranges are dense).
	span(lo, end P, n uint64) bool
	// appendPos and readPos encode a position.
	appendPos(b []byte, p P) []byte
	readPos(b []byte) (P, []byte, bool)
	// progress returns the committable progress of m in rng.
	progress(m mark[P], rng Range[P]) coordination.SplitProgress
	// resume returns the mark that committed progress p stands for in rng.
	resume(p coordination.SplitProgress, rng Range[P]) (mark[P], error)
}

// kindOf returns the kind of P.
func kindOf[P Position]() kind[P] {
	var zero P
	switch any(zero).(type) {
	case int64:
		return any(offsets{}).(kind[P])
	default:
		return any(keys{}).(kind[P])
	}
}

// offsets is the kind of int64 positions.
type offsets struct{}

func (offsets) name() string                      { return "offset" }
func (offsets) show(p int64) string               { return strconv.FormatInt(p, 10) }
func (offsets) code() byte                        { return 1 }
func (offsets) less(a, b int64) bool              { return a < b }
func (offsets) beforeEnd(p, end int64) bool       { return p < end }
func (offsets) after(p int64) int64               { return p + 1 }
func (offsets) assign(_, src int64) int64         { return src }
func (offsets) span(lo, end int64, n uint64) bool { return end > lo && uint64(end-lo) >= n }

func (offsets) fraction(start, p, end int64) float64 {
	if end <= start {
		return 1
	}
	return float64(p-start) / float64(end-start)
}

func (offsets) between(lo, end int64, share float64) (int64, bool) {
	if end-lo < 2 {
		return 0, false
	}
	s := lo + int64(math.Ceil(share*float64(end-lo)))
	return min(max(s, lo+1), end-1), true
}

func (offsets) appendPos(b []byte, p int64) []byte { return binary.AppendVarint(b, p) }

func (offsets) readPos(b []byte) (int64, []byte, bool) {
	p, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return p, b[n:], true
}

// progress of an offset lane is its watermark alone: one past the last
// position read (the end once the range is read), with no state.
func (offsets) progress(m mark[int64], rng Range[int64]) coordination.SplitProgress {
	switch {
	case m.done:
		return coordination.SplitProgress{Watermark: rng.End}
	case m.claimed:
		return coordination.SplitProgress{Watermark: m.last + 1}
	}
	return coordination.SplitProgress{Watermark: rng.Start}
}

func (offsets) resume(p coordination.SplitProgress, rng Range[int64]) (mark[int64], error) {
	w := p.Watermark
	if w < rng.Start || w > rng.End {
		return mark[int64]{}, fmt.Errorf("watermark %d is outside the split's range [%d, %d)", w, rng.Start, rng.End)
	}
	return mark[int64]{last: w - 1, claimed: w > rng.Start, done: w == rng.End, seq: w}, nil
}

// keys is the kind of byte-string positions. An empty end means the range
// runs to the end of the key space.
type keys struct{}

func (keys) name() string          { return "key" }
func (keys) show(p []byte) string  { return strconv.Quote(string(p)) }
func (keys) code() byte            { return 2 }
func (keys) less(a, b []byte) bool { return bytes.Compare(a, b) < 0 }

func (keys) beforeEnd(p, end []byte) bool {
	return len(end) == 0 || bytes.Compare(p, end) < 0
}

func (keys) after(p []byte) []byte {
	return append(append(make([]byte, 0, len(p)+1), p...), 0)
}

func (keys) assign(dst, src []byte) []byte    { return append(dst[:0], src...) }
func (keys) span([]byte, []byte, uint64) bool { return true }

// keyDigits is how many bytes past the common prefix interpolation looks at.
const keyDigits = 16

// scale maps k to an integer of keyDigits bytes past prefix (k's bytes
// after the prefix, zero-padded); an empty end maps to 256^keyDigits.
func scale(k []byte, prefix int, isEnd bool) *big.Int {
	if isEnd && len(k) == 0 {
		return new(big.Int).Lsh(big.NewInt(1), 8*keyDigits)
	}
	var digits [keyDigits]byte
	if prefix < len(k) {
		copy(digits[:], k[prefix:])
	}
	return new(big.Int).SetBytes(digits[:])
}

// commonPrefix is the length of the prefix a and b share (0 when end is
// unbounded).
func commonPrefix(a, end []byte) int {
	if len(end) == 0 {
		return 0
	}
	n := 0
	for n < len(a) && n < len(end) && a[n] == end[n] {
		n++
	}
	return n
}

func (keys) fraction(start, p, end []byte) float64 {
	cp := commonPrefix(start, end)
	lo, hi, at := scale(start, cp, false), scale(end, cp, true), scale(p, cp, false)
	whole := new(big.Float).SetInt(new(big.Int).Sub(hi, lo))
	part := new(big.Float).SetInt(new(big.Int).Sub(at, lo))
	if whole.Sign() <= 0 {
		return 1
	}
	f, _ := new(big.Float).Quo(part, whole).Float64()
	return min(max(f, 0), 1)
}

func (k keys) between(lo, end []byte, share float64) ([]byte, bool) {
	cp := commonPrefix(lo, end)
	a, b := scale(lo, cp, false), scale(end, cp, true)
	gap := new(big.Int).Sub(b, a)
	step, _ := new(big.Float).Mul(new(big.Float).SetInt(gap), big.NewFloat(share)).Int(nil)
	m := new(big.Int).Add(a, step)
	var digits [keyDigits]byte
	m.FillBytes(digits[:])
	s := append(append([]byte{}, lo[:cp]...), bytes.TrimRight(digits[:], "\x00")...)
	if !k.less(lo, s) || !k.beforeEnd(s, end) {
		return nil, false
	}
	return s, true
}

func (keys) appendPos(b []byte, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

func (keys) readPos(b []byte) ([]byte, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	return bytes.Clone(b[w : w+int(n)]), b[w+int(n):], true
}

// progress of a key lane is its mark's sequence number as the watermark,
// with the last key claimed as state.
func (k keys) progress(m mark[[]byte], _ Range[[]byte]) coordination.SplitProgress {
	return coordination.SplitProgress{Watermark: m.seq, State: encodeState[[]byte](k, m)}
}

func (k keys) resume(p coordination.SplitProgress, rng Range[[]byte]) (mark[[]byte], error) {
	m, err := decodeState[[]byte](k, p.State, p.Watermark)
	if err != nil {
		return m, err
	}
	if m.claimed && (k.less(m.last, rng.Start) || !k.beforeEnd(m.last, rng.End)) {
		return m, fmt.Errorf("resume key %q is outside the split's range [%q, %q)", m.last, rng.Start, rng.End)
	}
	return m, nil
}
