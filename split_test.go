package coordination

import (
	"errors"
	"strings"
	"testing"
)

func TestNewSplitID(t *testing.T) {
	for _, tc := range []struct {
		name, in, reason string
	}{
		{"empty", "", "split id must be 1..128 bytes, got 0"},
		{"too long", strings.Repeat("x", 129), "split id must be 1..128 bytes, got 129"},
		{"dot reserved", "a.b", `split id may only contain [A-Za-z0-9_-], got '.' at byte 1 in "a.b"`},
		{"space", "a b", `split id may only contain [A-Za-z0-9_-], got ' ' at byte 1 in "a b"`},
		{"slash first", "/x", `split id may only contain [A-Za-z0-9_-], got '/' at byte 0 in "/x"`},
		{"first bad byte wins", "ab*c.d", `split id may only contain [A-Za-z0-9_-], got '*' at byte 2 in "ab*c.d"`},
		{"one byte", "a", ""},
		{"max length", strings.Repeat("x", 128), ""},
		{"every allowed class", "azAZ09_-", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := NewSplitID(tc.in)
			if tc.reason == "" {
				if err != nil || string(id) != tc.in {
					t.Fatalf("NewSplitID(%q) = %q, %v; want it accepted", tc.in, id, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != Fatal || e.Reason != tc.reason {
				t.Fatalf("NewSplitID(%q) error = %v\nwant Fatal with reason %s", tc.in, err, tc.reason)
			}
			if id != "" {
				t.Fatalf("rejected id returned %q", id)
			}
		})
	}
}
