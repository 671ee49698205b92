package pgstore

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// recipeSQL returns the statements of the first sql block under heading
// in docs/postgres-security.md, one per element.
func recipeSQL(t *testing.T, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/postgres-security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/postgres-security.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sql\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no sql block under %q", heading)
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			out = append(out, strings.TrimSuffix(line, ";"))
		}
	}
	return out
}

// TestThePerJobRecipeIsolatesJobs runs the statements of
// docs/postgres-security.md's "Per-job roles" (its role and database names
// made unique, passwords dropped) and checks what the page claims: each
// job's role runs its job without CREATE on the database, cannot read or
// write the other job or create a job of its own, and the job's operator
// role reads its job only.
func TestThePerJobRecipeIsolatesJobs(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	db := pgtest.UniqueName("recipe")
	if err := s.CreateDatabase(opCtx(t), db); err != nil {
		t.Fatal(err)
	}
	role := regexp.MustCompile(`\b(orders|billing)_(worker|ops)\b`)
	for _, q := range recipeSQL(t, "## Per-job roles, schemas created by an administrator") {
		q = strings.ReplaceAll(q, " PASSWORD '...'", "")
		q = strings.ReplaceAll(q, "DATABASE pipelines", "DATABASE "+db)
		q = role.ReplaceAllString(q, db+"_${1}_${2}")
		if err := s.ExecOn(opCtx(t), db, q); err != nil {
			t.Fatal(err)
		}
	}
	dsn := func(r string) string {
		return fmt.Sprintf("postgres://%s_%s@127.0.0.1:%d/%s?sslmode=disable", db, r, s.Port(), db)
	}
	orders := newStore(t, s, Config{DSN: dsn("orders_worker"), Job: "orders"}, testTTL)
	mustCreate(t, orders, store.Durable, "job.split.a", "v")
	mustCreate(t, orders, store.Ephemeral, "worker.a", "v")
	billing := newStore(t, s, Config{DSN: dsn("billing_worker"), Job: "billing"}, testTTL)
	mustCreate(t, billing, store.Durable, "job.split.b", "v")

	// A job's role reaches no other job: the store refuses it, and so does
	// the server to plain SQL.
	_, err := newStore(t, s, Config{DSN: dsn("orders_worker"), Job: "billing"}, testTTL).List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, "owned by role "+db+"_billing_worker")
	conn, err := pgx.Connect(opCtx(t), dsn("orders_worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		"SELECT count(*) FROM coordination_billing.entries",
		"SELECT coordination_billing.create_entry(0::smallint, 'x', 'v', 0)",
		"DROP SCHEMA coordination_billing CASCADE",
		"CREATE SCHEMA coordination_squat",
	} {
		if _, err := conn.Exec(opCtx(t), q); !isPrivilegeErr(err) {
			t.Errorf("as the orders role, %s: %v, want permission denied", q, err)
		}
	}
	_, _, err = newStore(t, s, Config{DSN: dsn("orders_worker"), Job: "typo"}, testTTL).Create(opCtx(t), store.Durable, "k", nil)
	wantKind(t, err, coordination.Fatal, "privilege")

	// The operator role reads its job, and only its job.
	ops := newStore(t, s, Config{DSN: dsn("orders_ops"), Job: "orders", ExistingOnly: true}, testTTL)
	if l, err := ops.List(opCtx(t), store.Durable, ""); err != nil || len(l) != 1 {
		t.Fatalf("the orders operator's List = %v, %v", l, err)
	}
	w, err := ops.Watch(opCtx(t), store.Ephemeral, "")
	if err != nil {
		t.Fatal(err)
	}
	for ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone; ev = nextEvent(t, w, 5*time.Second) {
	}
	w.Stop()
	_, _, err = ops.Create(opCtx(t), store.Durable, "x", nil)
	wantKind(t, err, coordination.Fatal, "privilege")
	_, err = newStore(t, s, Config{DSN: dsn("orders_ops"), Job: "billing", ExistingOnly: true}, testTTL).List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, "privilege")
	if err := orders.DeleteJob(opCtx(t)); err != nil {
		t.Errorf("the orders role's DeleteJob of its own job: %v", err)
	}
	if _, err := billing.List(opCtx(t), store.Durable, ""); err != nil {
		t.Errorf("billing after orders was deleted: %v", err)
	}
}
