package protocol

import (
	"reflect"
	"testing"

	"github.com/spate-go/coordination"
)

func TestNewPlan(t *testing.T) {
	got := NewPlan("job:v1", 42)
	want := PlanRecord{Fingerprint: "job:v1", Generation: 0, Finality: coordination.PlanOpen, Planned: 0, PlannerState: nil, UpdatedAtMs: 42}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}
