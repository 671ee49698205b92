package main

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestWrapKeepsLinesShortAndWordsWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		words := rapid.SliceOf(rapid.StringMatching(`[a-z0-9.,()-]{1,30}`)).Draw(t, "words")
		head := rapid.SampledFrom([]string{"", "[  1.5s] ", "duplicates:  "}).Draw(t, "head")
		lines := wrap(head, strings.Join(words, " "), len(head))
		if !strings.HasPrefix(lines[0], head) {
			t.Fatalf("first line %q lacks the head %q", lines[0], head)
		}
		var got []string
		for i, l := range lines {
			if len(l) > lineWidth {
				t.Fatalf("line %d is %d columns: %q", i, len(l), l)
			}
			if i > 0 && !strings.HasPrefix(l, strings.Repeat(" ", len(head))) {
				t.Fatalf("continuation %q is not indented by %d", l, len(head))
			}
			got = append(got, strings.Fields(strings.TrimPrefix(l, head))...)
		}
		if strings.Join(got, " ") != strings.Join(words, " ") {
			t.Fatalf("words changed: %q became %q", words, got)
		}
	})
}
