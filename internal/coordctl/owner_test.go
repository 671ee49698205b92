package coordctl

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// TestOwnerFlagRefusesAJobOfAnotherRole: with -owner, coordctl opens a
// PostgreSQL job only when that role owns its schema and everything in it
// (pgstore.Config.Owner), so an operator's requeue never runs another
// role's functions; without it the schema's owner is expected.
func TestOwnerFlagRefusesAJobOfAnotherRole(t *testing.T) {
	be := pgBackend(t)
	ctx := t.Context()
	if _, _, err := be.open(t, "owned").Create(ctx, store.Durable, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	other := pgtest.UniqueName("ctl_other")
	if err := pg.Exec(ctx, "CREATE ROLE "+other); err != nil {
		t.Fatal(err)
	}
	// The job has no plan yet: status gets as far as reading it.
	for _, args := range [][]string{{"status", "-owner", "postgres"}, {"status"}} {
		if _, _, stderr := ctl(t, ctx, be, "owned", args...); !strings.Contains(stderr, "no job.plan record") {
			t.Fatalf("%q: %q, want the job read (up to its missing plan)", args, stderr)
		}
	}
	code, _, stderr := ctl(t, ctx, be, "owned", "status", "-owner", other)
	if code != ExitError || !strings.Contains(stderr, `job "owned" is not owned by role `+other+" (Config.Owner): schema coordination_owned is owned by role postgres") {
		t.Fatalf("status -owner %s: exit %d, %q; want an error naming both roles", other, code, stderr)
	}
}
