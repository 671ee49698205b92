package sqlscan

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// textCeil's bound selects exactly the keys the bytewise comparison does,
// for every key a PostgreSQL text can hold: valid UTF-8 without NUL.
func TestTextCeilSelectsTheSameKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]byte{0x00, 0x01, 'a', 'z', 0x7f, 0x80, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff})
		b := rapid.SliceOfN(alphabet, 0, 6).Draw(t, "bound")
		k := rapid.StringOfN(rapid.RuneFrom([]rune{1, 'a', 'z', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x10ffff}), 0, 4, -1).Draw(t, "key")
		if !utf8.ValidString(k) || bytes.IndexByte([]byte(k), 0) >= 0 {
			t.Skip("not a PostgreSQL text")
		}
		orig := bytes.Clone(b)
		c, ok := textCeil(b)
		if !bytes.Equal(b, orig) {
			t.Fatalf("textCeil modified its argument %q into %q", orig, b)
		}
		want := bytes.Compare([]byte(k), b) >= 0
		if !ok {
			if want {
				t.Fatalf("textCeil(%q) says no key is >= it, but %q is", b, k)
			}
			return
		}
		if !utf8.Valid(c) || bytes.IndexByte(c, 0) >= 0 {
			t.Fatalf("textCeil(%q) = %q is no PostgreSQL text", b, c)
		}
		if got := bytes.Compare([]byte(k), c) >= 0; got != want {
			t.Fatalf("key %q: >= bound %q is %v, >= textCeil %q is %v", k, b, want, c, got)
		}
	})
}
