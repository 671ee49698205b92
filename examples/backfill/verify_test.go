package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spate-go/coordination/internal/examplekit/exampletest"
)

// TestVerifyOfAMissingJobCreatesNothing runs -verify for jobs that do not
// exist, by the default name and by -job: each must exit 1 with "no such
// job", naming the job and bucket it looked for and the jobs there are,
// print no report, and leave the server's buckets as they were.
func TestVerifyOfAMissingJobCreatesNothing(t *testing.T) {
	t.Parallel()
	srv := embedded(t)
	testLedger(t, srv, "other") // a job that does exist
	defaultJob := jobName(planner{ds: newDataset(64, 1_000_000)}.Fingerprint())
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"default job", []string{"-nats", srv.URL(), "-verify"}, []string{
			`-verify: no such job "` + defaultJob + `"`, "no ledger bucket backfill_" + defaultJob + "_ledger",
			"jobs with a ledger there: other", "looked for the job of -splits 64 -records 1000000"}},
		{"named job", []string{"-nats", srv.URL(), "-verify", "-job", "nope"}, []string{
			`-verify: no such job "nope"`, "no ledger bucket backfill_nope_ledger", "jobs with a ledger there: other", "looked for the -job given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := exampletest.Run(t.Context(), run, tt.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range tt.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("printed a report for a job that does not exist:\n%s", stdout)
			}
		})
	}
	buckets := bucketNames(t, srv)
	if !slices.Equal(buckets, []string{"backfill_other_ledger"}) {
		t.Fatalf("buckets after -verify: %v, want only backfill_other_ledger", buckets)
	}
}
