// Package tty decides how a command writes to its output: whether it may
// redraw in place (a terminal) and whether it may colour (a terminal, and
// NO_COLOR unset: https://no-color.org). Output that is not a terminal (a
// pipe, a file) gets plain text with no escape sequences at all.
package tty

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Terminal reports whether w is a terminal that takes escape sequences: an
// *os.File open on a terminal, with TERM not "dumb".
func Terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// Color reports whether output to w may be coloured: w is a [Terminal] and
// NO_COLOR is unset or empty.
func Color(w io.Writer) bool {
	return Terminal(w) && os.Getenv("NO_COLOR") == ""
}

// Paint wraps s in the SGR colour sequence c (such as "32" for green) when
// on is true, and returns s unchanged otherwise (and when it is empty).
func Paint(on bool, c, s string) string {
	if !on || s == "" {
		return s
	}
	return "\x1b[" + c + "m" + s + "\x1b[0m"
}
