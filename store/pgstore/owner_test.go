package pgstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// rolesDB creates a database of the test's own and login roles in it, each
// with CONNECT and, when create is set, CREATE on the database; it returns
// the database and a DSN maker for a role.
func rolesDB(t *testing.T, s *pgtest.Server, prefix string, create bool, roles ...string) (string, func(role string) string) {
	t.Helper()
	db := pgtest.UniqueName(prefix)
	if err := s.CreateDatabase(opCtx(t), db); err != nil {
		t.Fatal(err)
	}
	privs := "CONNECT"
	if create {
		privs = "CONNECT, CREATE"
	}
	for _, r := range roles {
		for _, q := range []string{
			fmt.Sprintf("CREATE ROLE %s_%s LOGIN", db, r),
			fmt.Sprintf("GRANT %s ON DATABASE %s TO %s_%s", privs, db, db, r),
		} {
			if err := s.ExecOn(opCtx(t), db, q); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, func(role string) string {
		return fmt.Sprintf("postgres://%s_%s@127.0.0.1:%d/%s?sslmode=disable", db, role, s.Port(), db)
	}
}

// TestASquattedSchemaIsRefused plays the attack: a role with CREATE on the
// database creates a future job's schema ahead of its workers, replaces a
// write function with one that copies another job's records, and lets the
// worker role use it. The worker's first operation is refused, naming both
// roles, and the squatter's function never runs.
func TestASquattedSchemaIsRefused(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	db, dsn := rolesDB(t, s, "squat", true, "worker", "squatter")
	worker, squatter := db+"_worker", db+"_squatter"
	// The worker's other job, whose records the squatter wants.
	mustCreate(t, newStore(t, s, Config{DSN: dsn("worker"), Job: "payroll"}, testTTL), store.Durable, "secret", "salaries")

	// The squatter makes the future job's schema with the library itself,
	// then replaces create_entry and opens everything to the worker.
	mustCreate(t, newStore(t, s, Config{DSN: dsn("squatter"), Job: "future"}, testTTL), store.Durable, "bait", "v")
	for _, q := range []string{
		"CREATE TABLE coordination_future.loot (v bytea)",
		"GRANT INSERT ON coordination_future.loot TO PUBLIC",
		`CREATE OR REPLACE FUNCTION coordination_future.create_entry(p_keyspace smallint, p_key text, p_value bytea, p_ttl_us bigint) RETURNS bigint
		LANGUAGE plpgsql AS $fn$
		BEGIN
			INSERT INTO coordination_future.loot SELECT value FROM coordination_payroll.entries;
			RETURN 1;
		END $fn$`,
		"GRANT USAGE ON SCHEMA coordination_future TO PUBLIC",
		"GRANT ALL ON ALL TABLES IN SCHEMA coordination_future TO PUBLIC",
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA coordination_future TO PUBLIC",
	} {
		if err := s.ExecOn(opCtx(t), db, "SET ROLE "+squatter+"; "+q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	w := newStore(t, s, Config{DSN: dsn("worker"), Job: "future"}, testTTL)
	_, _, err := w.Create(opCtx(t), store.Durable, "k", []byte("v"))
	wantKind(t, err, coordination.Fatal, "schema coordination_future is owned by role "+squatter, "job \"future\" is not owned by role "+worker, "Config.Owner", "DROP SCHEMA")
	_, err = JobLeaseTTL(opCtx(t), Config{DSN: dsn("worker"), Job: "future", ExistingOnly: true, Owner: worker})
	wantKind(t, err, coordination.Fatal, "owned by role "+squatter)
	var n int64
	if err := s.QueryRowOn(opCtx(t), db, "SELECT count(*) FROM coordination_future.loot", nil, &n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the squatter's function ran: %d rows copied", n)
	}
}

// TestAForeignOwnedFunctionIsRefused: a function of the worker's own
// schema that another role owns (here given away by a superuser) is
// refused like a squatted schema, naming the function and both roles.
func TestAForeignOwnedFunctionIsRefused(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	db, dsn := rolesDB(t, s, "fnown", true, "worker", "other")
	job := "fn"
	mustCreate(t, newStore(t, s, Config{DSN: dsn("worker"), Job: job}, testTTL), store.Durable, "k", "v")
	if err := s.ExecOn(opCtx(t), db, fmt.Sprintf("ALTER FUNCTION coordination_fn.update_entry(smallint, text, bytea, bigint, bigint) OWNER TO %s_other", db)); err != nil {
		t.Fatal(err)
	}
	_, _, err := newStore(t, s, Config{DSN: dsn("worker"), Job: job}, testTTL).Get(opCtx(t), store.Durable, "k")
	wantKind(t, err, coordination.Fatal, "function coordination_fn.update_entry(smallint,text,bytea,bigint,bigint) is owned by role "+db+"_other", "is not owned by role "+db+"_worker")
	// An operator's read-only handle (ExistingOnly, no Owner) expects the
	// schema's owner for every object, and refuses it too.
	_, err = newStore(t, s, Config{DSN: s.DSN(db), Job: job, ExistingOnly: true}, testTTL).List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, "update_entry", "the schema's owner")
}

// TestATeamRoleOwnsTheJob: with Config.Owner, the store creates the schema
// and its objects as that role, and every member login role shares the
// job; a member without Owner set is refused (the job is not its own); a
// role that is not a member cannot create a job as it.
func TestATeamRoleOwnsTheJob(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	db, dsn := rolesDB(t, s, "team", true, "a", "b", "outsider")
	team := db + "_team"
	for _, q := range []string{
		"CREATE ROLE " + team + " NOLOGIN",
		fmt.Sprintf("GRANT %s TO %s_a, %s_b", team, db, db),
	} {
		if err := s.ExecOn(opCtx(t), db, q); err != nil {
			t.Fatal(err)
		}
	}
	a := newStore(t, s, Config{DSN: dsn("a"), Job: "shared", Owner: team}, testTTL)
	mustCreate(t, a, store.Durable, "ka", "v")
	var owners string
	if err := s.QueryRowOn(opCtx(t), db, `SELECT string_agg(DISTINCT pg_get_userbyid(o), ',') FROM (
		SELECT nspowner o FROM pg_namespace WHERE nspname = 'coordination_shared'
		UNION ALL SELECT relowner FROM pg_class WHERE relnamespace = 'coordination_shared'::regnamespace
		UNION ALL SELECT proowner FROM pg_proc WHERE pronamespace = 'coordination_shared'::regnamespace) x`, nil, &owners); err != nil {
		t.Fatal(err)
	}
	if owners != team {
		t.Errorf("the job's objects are owned by %q, want only %q", owners, team)
	}
	mustCreate(t, newStore(t, s, Config{DSN: dsn("b"), Job: "shared", Owner: team}, testTTL), store.Durable, "kb", "v")
	_, err := newStore(t, s, Config{DSN: dsn("b"), Job: "shared"}, testTTL).List(opCtx(t), store.Durable, "")
	wantKind(t, err, coordination.Fatal, "owned by role "+team, "is not owned by role "+db+"_b")
	_, _, err = newStore(t, s, Config{DSN: dsn("outsider"), Job: "theirs", Owner: team}, testTTL).Create(opCtx(t), store.Durable, "k", nil)
	wantKind(t, err, coordination.Fatal, "may not act as Config.Owner", "GRANT")
	_, err = newStore(t, s, Config{DSN: dsn("a"), Job: "nobody", Owner: db + "_ghost"}, testTTL).List(opCtx(t), store.Durable, "")
	if err == nil || !strings.Contains(err.Error(), db+"_ghost") {
		t.Errorf("a store with an Owner that does not exist: %v", err)
	}
}

// TestCodeTheLibraryNeverCreatesIsRefused: a trigger, row-level security,
// a rule, a view or a column default added to a job's schema (by its owner
// or a superuser) would run code as whichever role reads or writes the
// job: every store refuses the schema, naming what it found, whoever owns
// it, read-only (ExistingOnly) handles included.
func TestCodeTheLibraryNeverCreatesIsRefused(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	exec(t, s, "CREATE OR REPLACE FUNCTION public.hook_fn() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN RETURN NEW; END $fn$")
	exec(t, s, "CREATE OR REPLACE FUNCTION public.hook_val() RETURNS boolean LANGUAGE sql AS 'SELECT true'")
	for _, c := range []struct{ name, hook, says string }{
		{"trigger", "CREATE TRIGGER hook BEFORE INSERT ON {s}.changes FOR EACH ROW EXECUTE FUNCTION public.hook_fn()", "trigger hook on"},
		{"row-level security", "ALTER TABLE {s}.entries ENABLE ROW LEVEL SECURITY; CREATE POLICY p ON {s}.entries USING (public.hook_val())", "row-level security on table"},
		{"rule", "CREATE RULE hook AS ON UPDATE TO {s}.meta DO ALSO SELECT public.hook_val()", "rule hook on"},
		{"view", "CREATE VIEW {s}.extra AS SELECT public.hook_val()", "view "},
		{"column default", "ALTER TABLE {s}.changes ALTER COLUMN keyspace SET DEFAULT (public.hook_val())::int", "column default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, s, Config{}, testTTL)
			mustCreate(t, st, store.Durable, "k", "v")
			exec(t, s, st.sc.sql(c.hook))
			_, _, err := newStore(t, s, Config{Job: st.cfg.Job}, testTTL).Get(opCtx(t), store.Durable, "k")
			wantKind(t, err, coordination.Fatal, c.says, "never creates", "role postgres")
			_, err = newStore(t, s, Config{Job: st.cfg.Job, ExistingOnly: true}, testTTL).List(opCtx(t), store.Durable, "")
			wantKind(t, err, coordination.Fatal, c.says)
		})
	}
}
