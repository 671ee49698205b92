package main

import (
	"io"
	"testing"

	"github.com/spate-go/coordination/internal/examplekit"
)

// TestQuietSilencesLibraryLogsUnlessAsked checks that -quiet means only the
// report: the library's warnings are off unless -log asks for them.
func TestQuietSilencesLibraryLogsUnlessAsked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "warn"},
		{[]string{"-quiet"}, "off"},
		{[]string{"-quiet", "-log", "warn"}, "warn"},
		{[]string{"-log", "info"}, "info"},
	} {
		o, err := parseFlags(tt.args, examplekit.NewFlags("backfill", usageText, io.Discard))
		if err != nil {
			t.Fatal(err)
		}
		if o.Log != tt.want {
			t.Errorf("%q: -log %q, want %q", tt.args, o.Log, tt.want)
		}
	}
}
