package sqlscan

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Positions and SQL values of keys: a scanned key becomes a lane position;
// a position bound (a split's start or end, which a runtime cut may place
// between two keys) becomes the argument of a comparison that selects
// exactly the keys the bytewise comparison selects.

// intPos returns the position of a scanned integer key.
func intPos(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case int16:
		return int64(x), nil
	}
	return 0, fmt.Errorf("sqlscan: key value %v is a %T, not an integer; set Table.Kind to the key column's type", v, v)
}

// bytesPos returns the position of a scanned text, uuid or binary key.
func bytesPos(kind KeyKind, v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return bytes.Clone(x), nil
	case string:
		if kind == KeyUUID {
			return parseUUID(x)
		}
		return []byte(x), nil
	case [16]byte:
		return x[:], nil
	}
	return nil, fmt.Errorf("sqlscan: key value %v is a %T, not a %s key; set Table.Kind to the key column's type", v, v, kind)
}

// parseUUID returns the 16 bytes of a uuid's text form.
func parseUUID(s string) ([]byte, error) {
	h := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			h = append(h, s[i])
		}
	}
	b, err := hex.DecodeString(string(h))
	if err != nil || len(b) != 16 {
		return nil, fmt.Errorf("sqlscan: key %q is not a uuid", s)
	}
	return b, nil
}

// formatUUID returns the text form of 16 bytes.
func formatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// bound is a comparison argument for a position bound: none means no key
// compares past it (an upper bound that is no bound; a lower bound above
// every key: the range is empty).
type bound struct {
	arg  any
	none bool
}

// keyArg returns the argument of a real key (a claimed one): as is.
func (t Table) keyArg(k []byte) any {
	switch {
	case t.Kind == KeyUUID:
		return formatUUID(k)
	case t.Kind == KeyText:
		return string(k)
	}
	return k
}

// ceilArg returns the argument c of bound b such that for every key k
// the table can hold, k >= b bytewise exactly when k >= c in SQL (and so
// k < b exactly when k < c). none: no key is >= b.
func (t Table) ceilArg(b []byte) bound {
	switch t.Kind {
	case KeyUUID:
		c, ok := uuidCeil(b)
		if !ok {
			return bound{none: true}
		}
		return bound{arg: formatUUID(c)}
	case KeyText:
		if t.Dialect != Postgres {
			return bound{arg: string(b)}
		}
		c, ok := textCeil(b)
		if !ok {
			return bound{none: true}
		}
		return bound{arg: string(c)}
	}
	return bound{arg: b}
}

// uuidCeil returns the smallest 16-byte key >= b, or false.
func uuidCeil(b []byte) ([]byte, bool) {
	if len(b) <= 16 {
		c := make([]byte, 16)
		copy(c, b)
		return c, true
	}
	c := bytes.Clone(b[:16]) // the smallest key above b[:16], a prefix of b
	for i := 15; i >= 0; i-- {
		c[i]++
		if c[i] != 0 {
			return c, true
		}
	}
	return nil, false
}

// textCeil returns the smallest UTF-8 string without NUL bytes (what a
// PostgreSQL text can hold) >= b bytewise, or false. It never modifies b.
func textCeil(b []byte) ([]byte, bool) {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r == 0 || r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	if i == len(b) {
		return b, true
	}
	p, rest := b[:i:i], b[i:]
	if rest[0] == 0 {
		return append(p, 1), true
	}
	if r, ok := runeCeil(rest); ok {
		return utf8.AppendRune(p, r), true
	}
	for len(p) > 0 { // nothing with prefix p: the next rune of p's last
		r, n := utf8.DecodeLastRune(p)
		p = p[: len(p)-n : len(p)-n] // appending must not write into b
		if next, ok := runeAt(runeIndex(r) + 1); ok {
			return utf8.AppendRune(p, next), true
		}
	}
	return nil, false
}

// runeCount is how many scalar values (runes but surrogates) there are.
const runeCount = utf8.MaxRune + 1 - 0x800

// runeAt returns the i'th scalar value in order (surrogates skipped).
func runeAt(i int) (rune, bool) {
	if i >= runeCount {
		return 0, false
	}
	if i >= 0xD800 {
		return rune(i + 0x800), true
	}
	return rune(i), true
}

// runeIndex is runeAt's inverse.
func runeIndex(r rune) int {
	if r >= 0xE000 {
		return int(r) - 0x800
	}
	return int(r)
}

// runeCeil returns the smallest rune whose encoding is >= rest bytewise;
// encodings order as their runes do.
func runeCeil(rest []byte) (rune, bool) {
	var buf [4]byte
	i := sort.Search(runeCount, func(i int) bool {
		r, _ := runeAt(i)
		return bytes.Compare(utf8.AppendRune(buf[:0], r), rest) >= 0
	})
	return runeAt(i)
}
