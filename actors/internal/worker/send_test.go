package worker

import (
	"context"
	"testing"

	"github.com/anthdm/hollywood/actor"
)

// TestNewPIDsAreTheSpawnedOnes checks that the PIDs Spawn gives the actors
// before it spawns them are the ones hollywood gives the spawned processes.
func TestNewPIDsAreTheSpawnedOnes(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := NewPIDs(e, "w1.abc")
	got := e.SpawnFunc(func(*actor.Context) {}, Kind("lease"), actor.WithID("w1.abc"))
	defer func() { <-e.Poison(got).Done() }()
	if !got.Equals(want.Lease) {
		t.Fatalf("spawned %s, NewPIDs gave %s", got, want.Lease)
	}
}

// TestTellToAnActorNotSpawnedIsDropped checks a send to a part a test did
// not spawn (a nil PID) is dropped, and the parts that exist still get it:
// a missing receiver is never a panic.
func TestTellToAnActorNotSpawnedIsDropped(t *testing.T) {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 1)
	pid := e.SpawnFunc(func(c *actor.Context) {
		if s, ok := c.Message().(string); ok {
			got <- s
		}
	}, "recorder")
	defer func() { <-e.Poison(pid).Done() }()
	v := &Env{Engine: e}
	v.Ctx, v.Cancel = context.WithCancel(context.Background())
	defer v.Cancel()
	v.Tell("hello", nil, pid)
	if m := <-got; m != "hello" {
		t.Fatalf("got %v", m)
	}
}
