package main

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLedgerCountsDuplicatesAndLoss(t *testing.T) {
	l := newLedger(100, 2)
	l.deliver(0, recordRange{Start: 0, End: 40})
	l.deliver(1, recordRange{Start: 30, End: 50})
	l.deliver(1, recordRange{Start: 60, End: 100})
	if got := l.delivered(); got != 90 {
		t.Errorf("delivered %d, want 90", got)
	}
	if got := l.total(); got != 100 {
		t.Errorf("deliveries %d, want 100", got)
	}
	if got := l.duplicates(); got != 10 {
		t.Errorf("duplicates %d, want 10", got)
	}
	if got := l.lost(); got != 10 {
		t.Errorf("lost %d, want 10", got)
	}
	if a, b := l.byWorker(0), l.byWorker(1); a != 40 || b != 60 {
		t.Errorf("per worker %d, %d; want 40, 60", a, b)
	}
	want := []recordRange{{0, 50}, {60, 100}}
	if got := l.ranges(); !slices.Equal(got, want) {
		t.Errorf("ranges %v, want %v", got, want)
	}
}

func TestLedgerIsSafeForConcurrentWorkers(t *testing.T) {
	l := newLedger(10_000, 4)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := int64(0); i < 10_000; i += 100 {
				l.deliver(w, recordRange{Start: i, End: i + 100})
			}
		})
	}
	wg.Wait()
	if l.delivered() != 10_000 || l.duplicates() != 30_000 || l.lost() != 0 {
		t.Fatalf("delivered %d duplicates %d lost %d; want 10000 30000 0", l.delivered(), l.duplicates(), l.lost())
	}
}

func TestRangesRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   []recordRange
	}{
		{name: "none", in: nil},
		{name: "one", in: []recordRange{{0, 10}}},
		{name: "several", in: []recordRange{{0, 10}, {20, 35}, {99, 100}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRanges(formatRanges(tt.in))
			if err != nil || !slices.Equal(got, tt.in) {
				t.Fatalf("round trip of %v: %v, %v", tt.in, got, err)
			}
		})
	}
	if _, err := parseRanges("1-x"); err == nil {
		t.Fatal("parsed a bad range")
	}
}

func TestReportVerdict(t *testing.T) {
	tests := []struct {
		name   string
		r      report
		ok     bool
		result string
	}{
		{name: "fleet, nothing lost", r: report{Complete: true}, ok: true, result: "result:      OK, every planned record"},
		{name: "fleet, records lost", r: report{Complete: true, Lost: 3}, ok: false, result: "FAILED, 3 records lost"},
		{name: "fleet, worker failed", r: report{Complete: true, Errors: []string{"boom"}}, ok: false, result: "FAILED, the job did not complete"},
		{name: "instance, complete", r: report{Instance: "a", Complete: true, Lost: 50}, ok: true, result: "OK, the job completed"},
		{name: "instance, incomplete", r: report{Instance: "a"}, ok: false, result: "FAILED, the job did not complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.ok(); got != tt.ok {
				t.Fatalf("ok() = %v, want %v", got, tt.ok)
			}
			var buf bytes.Buffer
			tt.r.Elapsed = 1500 * time.Millisecond
			tt.r.write(&buf)
			if !strings.Contains(buf.String(), tt.result) {
				t.Fatalf("report lacks %q:\n%s", tt.result, buf.String())
			}
		})
	}
}
