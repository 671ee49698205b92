package objects

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// line is one record as the rule defines it: its offset and bytes.
type line struct {
	off  int64
	text string
}

// linesOf returns content's records by the package doc's definition: one
// starting at 0 and after every '\n', except at the end.
func linesOf(content []byte) []line {
	var out []line
	for p := 0; p < len(content); {
		j := bytes.IndexByte(content[p:], '\n')
		if j < 0 {
			j = len(content) - p
		}
		out = append(out, line{int64(p), string(content[p : p+j])})
		p += j + 1
	}
	return out
}

// genContent draws a file: lines of 0 to 40 bytes (many empty), the last
// with or without a newline; sometimes nothing at all.
func genContent(t *rapid.T, label string) []byte {
	n := rapid.IntRange(0, 30).Draw(t, label+"-lines")
	var b []byte
	for i := range n {
		l := rapid.IntRange(0, 40).Draw(t, fmt.Sprintf("%s-len%d", label, i))
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("%s-empty%d", label, i)) == 0 {
			l = 0
		}
		for k := range l {
			b = append(b, byte('a'+(i+k)%26))
		}
		if i < n-1 || rapid.Bool().Draw(t, label+"-lastnl") {
			b = append(b, '\n')
		}
	}
	return b
}

// cutLane is a lane as the kit runs it, for one range: Claim fails at or
// past end, and before a claim a runtime cut may lower end to a position
// past the last claim (as lanes' TrySplit does), handing the rest of the
// range back as a residual.
type cutLane struct {
	t         *rapid.T
	end, last int64 // last claimed, start-1 before any claim
	cuts      int
	residuals *[][2]int64
}

func (l *cutLane) End() int64 { return l.end }

func (l *cutLane) Claim(p int64) bool {
	if p <= l.last {
		l.t.Fatalf("claim %d after %d: claims must increase", p, l.last)
	}
	if next := l.last + 1; l.end-next >= 2 && rapid.IntRange(0, 3).Draw(l.t, "cut?") == 0 {
		at := rapid.Int64Range(next+1, l.end-1).Draw(l.t, "cut at")
		*l.residuals = append(*l.residuals, [2]int64{at, l.end})
		l.end = at
		l.cuts++
	}
	if p >= l.end {
		return false
	}
	l.last = p
	return true
}

// TestPropertyRecordRuleReadsEveryLineOnce checks the record rule of the
// package doc: ranges dividing a file at arbitrary byte positions, each
// read from a stream that starts one byte before it (as readObject opens
// it), with runtime cuts at arbitrary positions past the last claim,
// buffers as small as one byte and batches as small as one record, together
// deliver every line of the file
// exactly once, with its offset.
func TestPropertyRecordRuleReadsEveryLineOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		content := genContent(t, "file")
		n := int64(len(content))
		var work [][2]int64
		if n > 0 {
			bounds := []int64{0, n}
			for range rapid.IntRange(0, 6).Draw(t, "splits") {
				bounds = append(bounds, rapid.Int64Range(0, n).Draw(t, "bound"))
			}
			slices.Sort(bounds)
			bounds = slices.Compact(bounds)
			for i := range len(bounds) - 1 {
				work = append(work, [2]int64{bounds[i], bounds[i+1]})
			}
		}
		buf := rapid.IntRange(1, 64).Draw(t, "buffer")
		batch := rapid.IntRange(1, 8).Draw(t, "batch")
		var got []line
		fn := func(_ context.Context, r Record) error {
			got = append(got, line{r.Offset, string(r.Line)})
			return nil
		}
		for len(work) > 0 {
			rng := work[0]
			work = work[1:]
			lane := &cutLane{t: t, end: rng[1], last: rng[0] - 1, residuals: &work}
			for {
				cuts := lane.cuts
				s := &scanner{buf: make([]byte, buf), max: 1 << 20, batch: batch, fn: fn, lane: lane}
				from := lane.last + 1 // the kit's Lane.Next
				if _, err := s.readFrom(context.Background(), bytes.NewReader(content[max(from-1, 0):]), "k", 0, from); err != nil {
					t.Fatal(err)
				}
				if lane.cuts == cuts {
					break // read to its end with no cut: the range is done
				}
				// a cut moved the end during the read: the kit calls again from the last claim
			}
		}
		slices.SortFunc(got, func(a, b line) int { return int(a.off - b.off) })
		if want := linesOf(content); !slices.Equal(got, want) {
			t.Fatalf("content %q:\ndelivered %v\nwant      %v", content, got, want)
		}
	})
}

// TestRecordRuleAtTheBoundaries pins the rule's cases by hand: a range
// starting just after a newline takes the line there; a range starting
// inside a line (or on its newline) leaves it to the range before; an
// empty line belongs to the range holding its '\n'; a last line without a
// newline ends at the object's end.
func TestRecordRuleAtTheBoundaries(t *testing.T) {
	content := []byte("ab\n\ncd\nef") // lines at 0 "ab", 3 "", 4 "cd", 7 "ef"
	for _, c := range []struct {
		from, end int64
		want      []line
	}{
		{0, 1, []line{{0, "ab"}}},
		{1, 3, nil},               // inside "ab" through its newline: nothing starts here
		{2, 4, []line{{3, ""}}},   // from the newline of "ab": the empty line at 3
		{3, 4, []line{{3, ""}}},   // the empty line is its '\n' at 3
		{4, 5, []line{{4, "cd"}}}, // just after a newline
		{5, 9, []line{{7, "ef"}}}, // the last line has no newline
		{8, 9, nil},               // inside the last line
		{0, 9, linesOf(content)},  // the whole object
		{3, 8, []line{{3, ""}, {4, "cd"}, {7, "ef"}}},
	} {
		var got []line
		fn := func(_ context.Context, r Record) error {
			got = append(got, line{r.Offset, string(r.Line)})
			return nil
		}
		lane := &fixedLane{end: c.end, last: c.from - 1}
		s := &scanner{buf: make([]byte, 4), max: 64, batch: 2, fn: fn, lane: lane}
		if _, err := s.readFrom(context.Background(), bytes.NewReader(content[max(c.from-1, 0):]), "k", 0, c.from); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("[%d, %d): delivered %v, want %v", c.from, c.end, got, c.want)
		}
	}
}

// fixedLane is a lane whose end never moves.
type fixedLane struct{ end, last int64 }

func (l *fixedLane) End() int64 { return l.end }
func (l *fixedLane) Claim(p int64) bool {
	if p <= l.last || p >= l.end {
		return false
	}
	l.last = p
	return true
}

// TestLongLineIsRefusedNamingTheObject: a line longer than MaxLine ends the
// read with an error naming the object and the line's offset.
func TestLongLineIsRefusedNamingTheObject(t *testing.T) {
	content := []byte("ok\n" + string(bytes.Repeat([]byte("x"), 100)) + "\nok\n")
	s := &scanner{buf: make([]byte, 8), max: 64, batch: 4, fn: func(context.Context, Record) error { return nil }, lane: &fixedLane{end: 1 << 20, last: -1}}
	_, err := s.readFrom(context.Background(), bytes.NewReader(content), "logs/big.ndjson", 0, 0)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`object "logs/big.ndjson": the line at offset 3 is longer than 64 bytes`)) {
		t.Fatalf("err = %v, want the long line named", err)
	}
}
