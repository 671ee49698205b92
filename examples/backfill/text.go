package main

import "strings"

// lineWidth is the most columns a line of output takes (the report, the
// plain progress lines and the event log), so every line fits a
// 100-column terminal or log viewer.
const lineWidth = 99

// wrap lays text out after head, breaking it at spaces into lines of at
// most lineWidth columns whose continuations are indented by indent spaces.
// A word longer than a line stays whole.
func wrap(head, text string, indent int) []string {
	return pack(head, strings.Fields(text), " ", indent)
}

// pack lays items out in lines of at most lineWidth columns: the first line
// starts with head, later ones with indent spaces, and items on one line are
// separated by sep. An item is never split, so a line holding a single item
// longer than the width is the only kind that passes it.
func pack(head string, items []string, sep string, indent int) []string {
	var lines []string
	line, bare := head, true // bare: no item on the line yet
	for _, it := range items {
		if !bare && len(line)+len(sep)+len(it) > lineWidth {
			lines = append(lines, line)
			line, bare = strings.Repeat(" ", indent), true
		}
		if !bare {
			line += sep
		}
		line += it
		bare = false
	}
	return append(lines, line)
}
