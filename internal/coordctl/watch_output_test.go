package coordctl

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/tty/ptytest"
)

// checkWatchOutputs runs coordctl watch on the stalled job of the end-to-end
// test (3 of 4 splits completed, 80% of the weight, 1 quarantined) into a pipe and into a
// terminal, with and without NO_COLOR. Into a pipe it writes plain lines
// with no escape sequence at all, whatever NO_COLOR says; on a terminal it
// redraws the screen, coloured unless NO_COLOR is set.
func checkWatchOutputs(t *testing.T, ctx context.Context, be backend, job string) {
	t.Helper()
	const clear, sgr = "\x1b[H\x1b[2J", "\x1b[3"
	t.Setenv("TERM", "xterm")
	for _, noColor := range []string{"", "1"} {
		t.Setenv("NO_COLOR", noColor)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		out := watchInto(t, ctx, be, job, w, r, "stalled, leader none, 0 workers: 80.0% of the weight completed (3 of 4 splits), 0 held, 1 quarantined")
		if strings.Contains(out, "\x1b") || strings.Count(out, "\n") != strings.Count(out, " stalled, ") {
			t.Fatalf("watch into a pipe (NO_COLOR=%q) wrote escapes or other lines than one per refresh:\n%q", noColor, out)
		}

		terminal, controller := ptytest.Open(t)
		out = watchInto(t, ctx, be, job, terminal, controller, clear)
		if !strings.Contains(out, "completed (3 of 4 splits)") {
			t.Fatalf("watch on a terminal lacks the totals:\n%q", out)
		}
		if colored := strings.Contains(out, sgr); colored != (noColor == "") {
			t.Fatalf("watch on a terminal with NO_COLOR=%q: coloured %v, want %v:\n%q", noColor, colored, noColor == "", out)
		}
	}
}

// watchInto runs coordctl watch with stdout w until what it wrote, read
// from r, holds two refreshes (two occurrences of each), then stops it and
// returns what it wrote. It closes w and r.
func watchInto(t *testing.T, ctx context.Context, be backend, job string, w, r *os.File, each string) string {
	t.Helper()
	var got syncBuffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&got, r)
	}()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- Run(wctx, append([]string{"watch", "-interval", "20ms", "-job", job}, be.conn...), w, &stderr)
	}()
	eventually(t, 10*time.Second, "two refreshes of watch", func() bool { return strings.Count(got.String(), each) >= 2 })
	stop()
	if code := <-done; code != ExitOK {
		t.Fatalf("watch exit %d, stderr %s", code, stderr.String())
	}
	w.Close() // the reader drains what is left, then sees the end
	<-read
	r.Close()
	return got.String()
}
