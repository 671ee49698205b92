package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
)

// maxForeignNamed bounds how many foreign-owned objects an ownership error
// names.
const maxForeignNamed = 5

// checkSQL reads, in one statement, what checkOwner judges: a header row
// (kind 0) naming the expected role (NULL when no such role exists), the
// store's role and whether the schema's meta table exists; the job's
// schema and every table, index, sequence and function in it whose owner
// is not the expected one (kind 1); and the hooks the library never
// creates (kind 2, hooksSQL). $1 is the schema's name, $2 the configured
// Owner ("" for none), $3 ExistingOnly. Only catalog tables are read, so
// nothing of the schema runs.
var checkSQL = `
WITH want AS (
	SELECT r.oid, r.rolname::text AS name FROM pg_catalog.pg_roles r
	WHERE r.rolname = CASE
		WHEN $2::text <> '' THEN $2::text
		WHEN $3::boolean THEN (SELECT pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_namespace n WHERE n.nspname = $1::text)
		ELSE current_user::text END
), objs AS (
	SELECT 0 AS ord, 'schema ' || pg_catalog.quote_ident(n.nspname) AS what, n.nspowner AS owner
		FROM pg_catalog.pg_namespace n WHERE n.nspname = $1::text
	UNION ALL
	SELECT CASE c.relkind WHEN 'i' THEN 4 ELSE 1 END, CASE c.relkind WHEN 'S' THEN 'sequence ' WHEN 'i' THEN 'index ' WHEN 'r' THEN 'table ' WHEN 'p' THEN 'table ' ELSE 'relation ' END || c.oid::pg_catalog.regclass::text, c.relowner
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1::text
	UNION ALL
	SELECT 2, 'function ' || p.oid::pg_catalog.regprocedure::text, p.proowner
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1::text
)
SELECT 0, (SELECT w.name FROM want w), NULL::text, current_user::text, EXISTS (SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1::text AND c.relname = 'meta')
UNION ALL
(SELECT 1, o.what, pg_catalog.pg_get_userbyid(o.owner)::text, NULL, NULL FROM objs o
	WHERE o.owner IS DISTINCT FROM (SELECT w.oid FROM want w) ORDER BY o.ord, o.what)
UNION ALL
(SELECT 2, h.what, NULL, NULL, NULL FROM (` + hooksSQL + `) h(what) ORDER BY 2)`

// hooksSQL lists what, in the job's schema ($1), runs code as the role
// that reads or writes it although the library never creates it: row-level
// security, triggers, rules, views, and column defaults other than the
// library's own. Such a hook could be added by the schema's owner alone,
// so it matters when that owner is not the store's role (ExistingOnly).
const hooksSQL = `
SELECT 'row-level security on table ' || c.oid::pg_catalog.regclass::text
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1::text AND c.relrowsecurity
UNION ALL
SELECT 'trigger ' || pg_catalog.quote_ident(t.tgname) || ' on ' || c.oid::pg_catalog.regclass::text
	FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1::text AND NOT t.tgisinternal
UNION ALL
SELECT 'rule ' || pg_catalog.quote_ident(r.rulename) || ' on ' || c.oid::pg_catalog.regclass::text
	FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1::text AND r.rulename <> '_RETURN'
UNION ALL
SELECT 'view ' || c.oid::pg_catalog.regclass::text
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1::text AND c.relkind IN ('v', 'm')
UNION ALL
SELECT 'column default ' || c.oid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(a.attname) || ' = ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid)
	FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
	JOIN pg_catalog.pg_class c ON c.oid = d.adrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1::text AND pg_catalog.pg_get_expr(d.adbin, d.adrelid) NOT IN ('true', '0', 'clock_timestamp()')`

// checkOwner refuses the job's schema when it, or a table, index,
// sequence or function in it, is owned by a role other than the expected
// one (Config.Owner; else the store's role; else, with ExistingOnly, the
// schema's owner), or when it holds code the library never creates
// (hooksSQL): either could run as this store's role
// (docs/postgres-security.md). A schema that does not exist passes. It
// reports whether the schema's meta table exists. It reads the catalog
// only, in one round trip: a new session's first read of the catalog may
// take longer than the store's statement timeout on a loaded server, and
// it holds no lock of the job, so it runs without one (only ctx bounds
// it).
func (s *Store) checkOwner(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL statement_timeout = 0")
	b.Queue(checkSQL, s.sc.name, s.cfg.Owner, s.cfg.ExistingOnly)
	b.Queue("COMMIT")
	br := pool.SendBatch(ctx, b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return false, s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return false, s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
	}
	exists, err := s.judgeOwner(ctx, rows)
	if err != nil {
		return false, err
	}
	if _, err := br.Exec(); err != nil {
		return false, s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
	}
	return exists, nil
}

// checkOwnerIn is checkOwner in tx, whose statement timeout the caller set.
func (s *Store) checkOwnerIn(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, checkSQL, s.sc.name, s.cfg.Owner, s.cfg.ExistingOnly)
	if err != nil {
		return s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
	}
	_, err = s.judgeOwner(ctx, rows)
	return err
}

// judgeOwner reads the rows of checkSQL and returns whether the meta table
// exists, or the Fatal refusal naming what is foreign.
func (s *Store) judgeOwner(ctx context.Context, rows pgx.Rows) (bool, error) {
	var want *string
	var self string
	var exists bool
	var owned, hooks []string
	for rows.Next() {
		var kind int
		var what, owner, cur *string
		var meta *bool
		if err := rows.Scan(&kind, &what, &owner, &cur, &meta); err != nil {
			rows.Close()
			return false, s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
		}
		switch kind {
		case 0:
			want, self, exists = what, deref(cur), meta != nil && *meta
		case 1:
			owned = append(owned, fmt.Sprintf("%s is owned by role %s", deref(what), deref(owner)))
		default:
			hooks = append(hooks, deref(what))
		}
	}
	if err := rows.Err(); err != nil {
		return false, s.fail(ctx, "checking the owner of schema "+s.sc.name, err)
	}
	switch {
	case len(owned) > 0 && want == nil && s.cfg.Owner != "":
		return false, coordination.Errorf(coordination.Fatal, "pgstore: Config.Owner names role %q, which does not exist; create it or fix Config.Owner", s.cfg.Owner)
	case len(owned) > 0 && want != nil:
		whose := fmt.Sprintf("role %s (the role this store connects as)", *want)
		switch {
		case s.cfg.Owner != "":
			whose = fmt.Sprintf("role %s (Config.Owner)", *want)
		case s.cfg.ExistingOnly:
			whose = fmt.Sprintf("role %s (the schema's owner; set Config.Owner to name the role you expect)", *want)
		}
		return false, coordination.Errorf(coordination.Fatal,
			"pgstore: job %q is not owned by %s: %s. Another role made or changed the job's schema, and its code would run as role %s, so the store refuses it. "+
				"If that role is meant to own the job, set Config.Owner (coordctl -owner) to it; otherwise drop the schema (DROP SCHEMA %s CASCADE, as its owner or a superuser), find out who created it, and start the job again (see docs/postgres-security.md)",
			s.cfg.Job, whose, strings.Join(capNames(owned), "; "), self, s.sc.ident)
	case len(hooks) > 0:
		return false, coordination.Errorf(coordination.Fatal,
			"pgstore: job %q: schema %s holds %s, which the library never creates and which would run code as role %s when it reads or writes the job; the store refuses it. "+
				"Remove it (or drop the schema and start the job again), and find out who added it (see docs/postgres-security.md)",
			s.cfg.Job, s.sc.ident, strings.Join(capNames(hooks), "; "), self)
	}
	return exists, nil
}

// capNames keeps the first maxForeignNamed names and counts the rest.
func capNames(names []string) []string {
	if len(names) <= maxForeignNamed {
		return names
	}
	return append(names[:maxForeignNamed:maxForeignNamed], fmt.Sprintf("and %d more", len(names)-maxForeignNamed))
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
