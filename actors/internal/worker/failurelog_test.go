package worker

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestFailureRunWarnsOncePerRun(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var f FailureRun
	f.Landed(log, "renewed again") // no run: nothing to say
	for range 4 {
		f.Failed(log, "renewal failed", errors.New("timeout"))
	}
	f.Landed(log, "renewed again")
	f.Failed(log, "renewal failed", errors.New("timeout"))

	var levels []string
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		levels = append(levels, strings.Fields(line)[1])
	}
	want := []string{"level=WARN", "level=DEBUG", "level=DEBUG", "level=DEBUG", "level=INFO", "level=WARN"}
	if strings.Join(levels, " ") != strings.Join(want, " ") {
		t.Fatalf("levels %v, want %v\n%s", levels, want, buf.String())
	}
	if !strings.Contains(buf.String(), `msg="renewed again" failures=4`) {
		t.Fatalf("recovery line lacks the count of failed attempts:\n%s", buf.String())
	}
}
