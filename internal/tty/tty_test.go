package tty_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spate-go/coordination/internal/tty"
	"github.com/spate-go/coordination/internal/tty/ptytest"
)

func TestOnlyATerminalTakesEscapes(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, out := range map[string]*os.File{"a pipe": w, "a file": file, os.DevNull + " (a character device)": null} {
		if tty.Terminal(out) || tty.Color(out) {
			t.Errorf("%s: Terminal %v, Color %v; want neither", name, tty.Terminal(out), tty.Color(out))
		}
	}
	terminal, _ := ptytest.Open(t)
	if !tty.Terminal(terminal) || !tty.Color(terminal) {
		t.Fatalf("a terminal: Terminal %v, Color %v; want both", tty.Terminal(terminal), tty.Color(terminal))
	}
	t.Setenv("NO_COLOR", "1")
	if !tty.Terminal(terminal) || tty.Color(terminal) {
		t.Fatalf("a terminal with NO_COLOR: Terminal %v, Color %v; want a terminal without colour", tty.Terminal(terminal), tty.Color(terminal))
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if tty.Terminal(terminal) || tty.Color(terminal) {
		t.Fatalf("a dumb terminal: Terminal %v, Color %v; want neither", tty.Terminal(terminal), tty.Color(terminal))
	}
}

func TestPaintColoursOnlyWhenOn(t *testing.T) {
	if got := tty.Paint(false, "31", "x"); got != "x" {
		t.Fatalf("Paint(false) = %q, want x", got)
	}
	if got := tty.Paint(true, "31", "x"); got != "\x1b[31mx\x1b[0m" {
		t.Fatalf("Paint(true) = %q", got)
	}
}
