package driver_test

import (
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestFailOfAnUnheldSplitDoesNotReachTheCoordinator(t *testing.T) {
	h := newHarness(t)
	if err := h.d.Fail("never-held", "bad row"); err != nil {
		t.Fatalf("Fail = %v, want nil", err)
	}
	if got := h.script.Failed(); len(got) != 0 {
		t.Fatalf("Failed = %v, want no coordinator call", got)
	}
}

func TestFailReportsTheTenancyEpochAndRetires(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome coordination.ErrorKind // 0: lands
	}{
		{"lands", 0},
		{"fenced", coordination.Fenced},
		{"retryable", coordination.Retryable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			la := h.open("a", 7, nil)
			if tc.outcome != 0 {
				h.script.FailNextFail("a", tc.outcome)
			}
			if err := h.d.Fail("a", "row 12 unparseable"); err != nil {
				t.Fatalf("Fail = %v, want nil", err)
			}
			if got, want := fails(h), []testkitFail{{"a", 7, "row 12 unparseable"}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("Fail calls = %v, want %v", got, want)
			}
			h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{la.ID}})
			if h.src.count("CloseSplit", "a") != 1 {
				t.Fatal("failed split not closed")
			}
			if err := h.d.Fail("a", "again"); err != nil || len(h.script.Failed()) != 1 {
				t.Fatal("a failed split is still held")
			}
		})
	}
}

func TestFatalFailAnswerIsReturnedAndKeepsTheSplit(t *testing.T) {
	h := newHarness(t)
	h.open("a", 7, nil)
	h.script.FailNextFail("a", coordination.Fatal)
	wantErr(t, h.d.Fail("a", "x"), coordination.Fatal, "scripted fatal for split a")
	h.expect(driver.Idle{})
	if got := h.d.Assignments(); len(got) != 1 {
		t.Fatalf("Assignments = %v, want a still held", got)
	}
}
