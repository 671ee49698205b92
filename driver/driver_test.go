package driver_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

func TestNewSetsWakerAndStopBeforeStart(t *testing.T) {
	stop := make(chan struct{})
	h := newHarness(t, driver.WithStop(stop))
	if want := []string{"SetWaker", "SetStop", "Start"}; !reflect.DeepEqual(h.c.lifecycle, want) {
		t.Fatalf("coordinator calls = %v, want %v", h.c.lifecycle, want)
	}
	// The waker handed to the coordinator is the driver's own.
	h.script.Lose("x")
	select {
	case <-h.d.Waker().C():
	default:
		t.Fatal("a coordinator event did not wake the driver's Waker")
	}
}

func TestNewWithoutStopDoesNotCallSetStop(t *testing.T) {
	h := newUnstarted(t)
	if want := []string{"SetWaker"}; !reflect.DeepEqual(h.c.lifecycle, want) {
		t.Fatalf("coordinator calls = %v, want %v", h.c.lifecycle, want)
	}
}

func TestStartStartsTheCoordinatorWithThePlanner(t *testing.T) {
	h := newHarness(t)
	if !h.script.Started() {
		t.Fatal("coordinator not started")
	}
	if p := h.script.TakePlanner(); p != (planner{}) {
		t.Fatalf("planner = %v, want the one passed to Start", p)
	}
}

func TestStartReturnsTheCoordinatorErrorUnchanged(t *testing.T) {
	h := newUnstarted(t)
	boom := &coordination.Error{Kind: coordination.Fatal, Reason: "the planner fingerprint must not be empty"}
	h.c.startErr = boom
	if err := h.d.Start(planner{}); err != boom {
		t.Fatalf("Start = %v, want the coordinator's error unchanged", err)
	}
	// The driver stays unstarted.
	_, err := h.d.PollEvents(0)
	wantErr(t, err, coordination.Fatal, "driver used before Start")
}

func TestStartTwiceIsFatal(t *testing.T) {
	h := newHarness(t)
	wantErr(t, h.d.Start(planner{}), coordination.Fatal, "driver started twice")
	if n := len(h.c.lifecycle); n != 2 { // SetWaker, Start
		t.Fatalf("coordinator calls = %v; a second Start must not reach it", h.c.lifecycle)
	}
}

func TestCallsBeforeStartAreFatal(t *testing.T) {
	h := newUnstarted(t)
	const used = "driver used before Start"
	_, err := h.d.PollEvents(0)
	wantErr(t, err, coordination.Fatal, used)
	wantErr(t, h.d.Commit([]driver.Watermark{{Partition: 1, Value: 1}}), coordination.Fatal, used)
	wantErr(t, h.d.Fail("a", "poison"), coordination.Fatal, used)
	if h.c.pollCalls != 0 || len(h.script.Failed()) != 0 {
		t.Fatal("a call before Start reached the coordinator")
	}
	if got := h.d.Assignments(); got != nil {
		t.Fatalf("Assignments before Start = %v, want nil", got)
	}
}

func TestShutdownBeforeStartOnlyDeparts(t *testing.T) {
	h := newUnstarted(t)
	h.c.departErr = &coordination.Error{Kind: coordination.Retryable, Reason: "x"}
	if err := h.d.Shutdown([]driver.Watermark{{Partition: 1, Value: 3}}); err != h.c.departErr {
		t.Fatalf("Shutdown = %v, want Depart's error unchanged", err)
	}
	if !h.script.Departed() || len(h.script.DepartedWith()) != 0 {
		t.Fatalf("Departed = %v with %v, want true with nothing", h.script.Departed(), h.script.DepartedWith())
	}
	if len(h.script.FinalCommits()) != 0 || len(h.src.calls) != 0 {
		t.Fatal("Shutdown before Start did more than Depart")
	}
	if want := []string{"SetWaker"}; !reflect.DeepEqual(h.c.lifecycle, want) {
		t.Fatalf("coordinator lifecycle calls = %v; Start must not be called", h.c.lifecycle)
	}
}

func TestCallsAfterShutdownAreFatal(t *testing.T) {
	for _, started := range []bool{true, false} {
		name := map[bool]string{true: "started", false: "never started"}[started]
		t.Run(name, func(t *testing.T) {
			h := newUnstarted(t)
			if started {
				if err := h.d.Start(planner{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.d.Shutdown(nil); err != nil {
				t.Fatalf("Shutdown = %v", err)
			}
			const shut = "driver is shut down"
			wantErr(t, h.d.Start(planner{}), coordination.Fatal, shut)
			_, err := h.d.PollEvents(0)
			wantErr(t, err, coordination.Fatal, shut)
			wantErr(t, h.d.Commit(nil), coordination.Fatal, shut)
			wantErr(t, h.d.Fail("a", "x"), coordination.Fatal, shut)
			wantErr(t, h.d.Shutdown(nil), coordination.Fatal, shut)
			if got := h.d.Assignments(); got != nil {
				t.Fatalf("Assignments after Shutdown = %v", got)
			}
		})
	}
}

func TestAssignmentsListsOpenLanesSortedBySplit(t *testing.T) {
	h := newHarness(t)
	lc := h.open("c", 1, nil)
	la := h.open("a", 1, nil)
	h.src.openErrs["b"] = []error{errors.New("not yet")}
	h.script.Gain(spec("b"), 1, nil) // held but not opened: not listed
	h.pollErr()
	want := []driver.Assignment{
		{Split: "a", Lane: la.ID, Partition: la.Partition},
		{Split: "c", Lane: lc.ID, Partition: lc.Partition},
	}
	if got := h.d.Assignments(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Assignments = %v, want %v", got, want)
	}
	ev := h.poll() // the retried open of b
	lb := ev.(driver.LanesAdded).Lanes[0]
	h.script.Lose("c")
	h.expect(driver.LanesRevoked{Lanes: []driver.LaneID{lc.ID}})
	want = []driver.Assignment{want[0], {Split: "b", Lane: lb.ID, Partition: lb.Partition}}
	if got := h.d.Assignments(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Assignments after losing c = %v, want %v", got, want)
	}
}
