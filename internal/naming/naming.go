// Package naming holds the one rule for names the library accepts (split ids,
// instance ids, job names): 1..max bytes of [A-Za-z0-9_-].
package naming

import "fmt"

// Check returns "" when s is 1..max bytes of [A-Za-z0-9_-], else the reason it
// is not, worded for what (for example "split id" or "InstanceID").
func Check(what, s string, max int) string {
	if reason := CheckLength(what, s, max); reason != "" {
		return reason
	}
	return CheckBytes(what, s)
}

// CheckLength returns "" when s is 1..max bytes long, else the reason.
func CheckLength(what, s string, max int) string {
	if len(s) < 1 || len(s) > max {
		return fmt.Sprintf("%s must be 1..%d bytes, got %d", what, max, len(s))
	}
	return ""
}

// CheckBytes returns "" when every byte of s is in [A-Za-z0-9_-], else the
// reason naming the first bad byte, its position and the quoted name.
func CheckBytes(what, s string) string {
	for i := 0; i < len(s); i++ {
		if !Allowed(s[i]) {
			return fmt.Sprintf("%s may only contain [A-Za-z0-9_-], got %q at byte %d in %q",
				what, rune(s[i]), i, s)
		}
	}
	return ""
}

// Allowed reports whether b may appear in a name.
func Allowed(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}
