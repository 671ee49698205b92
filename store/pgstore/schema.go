package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spate-go/coordination"
)

// schemaVersion is the layout of a job's schema this package creates and
// reads; meta.version records it.
const schemaVersion = 1

// lockSalt is hashed with the schema's name into the job's advisory lock
// key, so that the key is the library's own.
const lockSalt = "spate-coordination/"

// A job's schema (docs/protocol.md, "Stores"):
//
//   - entries holds every live key of both keyspaces (0 durable, 1
//     ephemeral) with its value, revision and, for ephemeral keys, the
//     server time it expires at.
//   - changes is the change log: one row per winning write, delete and
//     expiry, written in the same transaction, in revision order; a NULL
//     value is a delete. Watches read it; it is pruned by age.
//   - revisions is the sequence every revision comes from, both keyspaces.
//   - meta holds the layout version, the job's lease TTL and the highest
//     revision pruned from the change log.
//
// The schema is created first, on its own (setupSchema), AUTHORIZATION its
// owner, and its ownership checked before anything below runs in it. The
// functions run with search_path = pg_catalog, pg_temp, so that no
// function or operator of another schema stands in for a built-in one.
//
// Every write runs in one of the functions below, which first take the
// job's transaction-scoped advisory lock: writes of a job commit one at a
// time, in revision order, so a reader's snapshot always holds a prefix of
// the change log and a watch can resume after the last revision it read.
// A losing write takes the lock too but writes nothing.
const schemaDDL = `
CREATE TABLE IF NOT EXISTS {s}.meta (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	version integer NOT NULL,
	lease_ttl_us bigint NOT NULL,
	pruned_upto bigint NOT NULL DEFAULT 0
);
CREATE SEQUENCE IF NOT EXISTS {s}.revisions AS bigint;
CREATE TABLE IF NOT EXISTS {s}.entries (
	keyspace smallint NOT NULL,
	key text COLLATE "C" NOT NULL,
	value bytea NOT NULL,
	revision bigint NOT NULL,
	expires_at timestamptz,
	PRIMARY KEY (keyspace, key)
);
CREATE INDEX IF NOT EXISTS entries_expiry ON {s}.entries (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS {s}.changes (
	revision bigint PRIMARY KEY,
	keyspace smallint NOT NULL,
	key text COLLATE "C" NOT NULL,
	value bytea,
	written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE OR REPLACE FUNCTION {s}.notify_write(p_keyspace smallint, p_key text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $fn$
	SELECT pg_notify({name}, p_keyspace::text || CASE WHEN strpos(p_key, '.') BETWEEN 2 AND 65 THEN ':' || left(p_key, strpos(p_key, '.')) ELSE '' END)
$fn$;

CREATE OR REPLACE FUNCTION {s}.create_entry(p_keyspace smallint, p_key text, p_value bytea, p_ttl_us bigint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	now_ts timestamptz;
	old_expiry timestamptz;
	rev bigint;
BEGIN
	PERFORM pg_advisory_xact_lock({lock});
	now_ts := clock_timestamp();
	SELECT e.expires_at INTO old_expiry FROM {s}.entries e WHERE e.keyspace = p_keyspace AND e.key = p_key;
	IF FOUND THEN
		IF old_expiry IS NULL OR old_expiry > now_ts THEN
			RETURN 0;
		END IF;
		-- Expired but not swept yet: log its expiry before the new write.
		DELETE FROM {s}.entries e WHERE e.keyspace = p_keyspace AND e.key = p_key;
		INSERT INTO {s}.changes (revision, keyspace, key, value) VALUES (nextval('{s}.revisions'), p_keyspace, p_key, NULL);
	END IF;
	rev := nextval('{s}.revisions');
	INSERT INTO {s}.entries (keyspace, key, value, revision, expires_at)
		VALUES (p_keyspace, p_key, p_value, rev, CASE WHEN p_ttl_us > 0 THEN now_ts + p_ttl_us * interval '1 microsecond' END);
	INSERT INTO {s}.changes (revision, keyspace, key, value) VALUES (rev, p_keyspace, p_key, p_value);
	PERFORM {s}.notify_write(p_keyspace, p_key);
	RETURN rev;
END
$fn$;

CREATE OR REPLACE FUNCTION {s}.update_entry(p_keyspace smallint, p_key text, p_value bytea, p_expected bigint, p_ttl_us bigint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	now_ts timestamptz;
	rev bigint;
BEGIN
	PERFORM pg_advisory_xact_lock({lock});
	now_ts := clock_timestamp();
	UPDATE {s}.entries e SET value = p_value, revision = nextval('{s}.revisions'),
			expires_at = CASE WHEN p_ttl_us > 0 THEN now_ts + p_ttl_us * interval '1 microsecond' END
		WHERE e.keyspace = p_keyspace AND e.key = p_key AND e.revision = p_expected
			AND (e.expires_at IS NULL OR e.expires_at > now_ts)
		RETURNING e.revision INTO rev;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	INSERT INTO {s}.changes (revision, keyspace, key, value) VALUES (rev, p_keyspace, p_key, p_value);
	PERFORM {s}.notify_write(p_keyspace, p_key);
	RETURN rev;
END
$fn$;

CREATE OR REPLACE FUNCTION {s}.delete_entry(p_keyspace smallint, p_key text, p_expected bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	now_ts timestamptz;
	old_rev bigint;
	old_expiry timestamptz;
BEGIN
	PERFORM pg_advisory_xact_lock({lock});
	now_ts := clock_timestamp();
	SELECT e.revision, e.expires_at INTO old_rev, old_expiry FROM {s}.entries e WHERE e.keyspace = p_keyspace AND e.key = p_key;
	IF NOT FOUND THEN
		RETURN true;
	END IF;
	IF p_expected <> 0 AND old_rev <> p_expected AND (old_expiry IS NULL OR old_expiry > now_ts) THEN
		RETURN false;
	END IF;
	DELETE FROM {s}.entries e WHERE e.keyspace = p_keyspace AND e.key = p_key;
	INSERT INTO {s}.changes (revision, keyspace, key, value) VALUES (nextval('{s}.revisions'), p_keyspace, p_key, NULL);
	PERFORM {s}.notify_write(p_keyspace, p_key);
	RETURN true;
END
$fn$;

CREATE OR REPLACE FUNCTION {s}.sweep_expired(p_limit integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	now_ts timestamptz := clock_timestamp();
	n integer;
BEGIN
	-- min() reads the first entry of the expiry index; a "<= now" test
	-- would scan the whole table under a generic plan.
	IF coalesce((SELECT min(e.expires_at) FROM {s}.entries e) > now_ts, true) THEN
		RETURN 0;
	END IF;
	PERFORM pg_advisory_xact_lock({lock});
	now_ts := clock_timestamp();
	WITH gone AS (
		DELETE FROM {s}.entries e
		USING (SELECT x.keyspace, x.key FROM {s}.entries x WHERE x.expires_at <= now_ts ORDER BY x.expires_at LIMIT p_limit) old
		WHERE e.keyspace = old.keyspace AND e.key = old.key
		RETURNING e.keyspace, e.key
	)
	INSERT INTO {s}.changes (revision, keyspace, key, value)
		SELECT nextval('{s}.revisions'), gone.keyspace, gone.key, NULL FROM gone;
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n > 0 THEN
		PERFORM pg_notify({name}, '1');
	END IF;
	RETURN n;
END
$fn$;

CREATE OR REPLACE FUNCTION {s}.prune_changes(p_retention_us bigint, p_limit integer) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
	cutoff_ts timestamptz := clock_timestamp() - p_retention_us * interval '1 microsecond';
	oldest timestamptz;
	cutoff bigint;
	n integer;
BEGIN
	SELECT c.written_at INTO oldest FROM {s}.changes c ORDER BY c.revision LIMIT 1;
	IF NOT FOUND OR oldest >= cutoff_ts THEN
		RETURN 0;
	END IF;
	SELECT max(head.revision) INTO cutoff
		FROM (SELECT c.revision, c.written_at FROM {s}.changes c ORDER BY c.revision LIMIT p_limit) head
		WHERE head.written_at < cutoff_ts;
	UPDATE {s}.meta SET pruned_upto = greatest(pruned_upto, cutoff);
	DELETE FROM {s}.changes c WHERE c.revision <= cutoff;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END
$fn$;
`

// schema names a job's schema in SQL.
type schema struct {
	name  string // coordination_<Job>, the schema's and the channel's name
	ident string // name quoted as an identifier
}

func newSchema(job string) schema {
	name := "coordination_" + job
	return schema{name: name, ident: pgx.Identifier{name}.Sanitize()}
}

// sql expands {s} (the schema), {name} (its name as a literal) and {lock}
// (the job's advisory lock key) in q.
func (sc schema) sql(q string) string {
	lit := "'" + sc.name + "'" // a job name holds no quote
	return strings.NewReplacer("{s}", sc.ident, "{name}", lit, "{lock}", strconv.FormatInt(sc.lockKey(), 10)).Replace(q)
}

// lockKey is the job's advisory lock key: 64 bits of the SHA-256 of the
// salted schema name, so that two jobs share a lock (and serialise each
// other's writes) with a chance of 2^-64, not a 32-bit hash's.
func (sc schema) lockKey() int64 {
	sum := sha256.Sum256([]byte(lockSalt + sc.name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// setup makes sure the job's schema exists at this layout with the store's
// lease TTL and is owned as Config.Owner says (checkOwner): a read first
// (which a read-only role can do); then, unless ExistingOnly, the DDL,
// serialized across concurrent starts by the job's advisory lock, in one
// transaction (createSchema).
func (s *Store) setup(ctx context.Context, pool *pgxpool.Pool) error {
	ok, err := s.checkMeta(ctx, pool)
	if err != nil || ok {
		return err
	}
	if s.cfg.ExistingOnly {
		return coordination.Errorf(coordination.Fatal, "pgstore: job %q does not exist: no schema %s in this database (ExistingOnly is set, so it is not created); check the job name and the database", s.cfg.Job, s.sc.name)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return s.createSchema(ctx, tx) })
	var ce *coordination.Error
	if errors.As(err, &ce) {
		return err
	}
	if err != nil {
		return s.fail(ctx, "creating schema "+s.sc.name, err)
	}
	if ok, err := s.checkMeta(ctx, pool); err != nil || ok {
		return err
	}
	return coordination.Errorf(coordination.Fatal, "pgstore: schema %s has no meta row after it was created; drop the schema (coordctl delete-job) and start again", s.sc.name)
}

// createSchema creates the job's schema in tx: the schema itself
// AUTHORIZATION its owner (Config.Owner, else the store's role) when it
// does not exist yet, then, once checkOwner accepts what is there (nothing
// of the schema runs before), its objects as that owner, and the meta row.
func (s *Store) createSchema(ctx context.Context, tx pgx.Tx) error {
	// Concurrent first starts queue on the lock behind each other's DDL,
	// longer than the store's statement timeout on a loaded server: only
	// ctx bounds the setup.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.sc.sql("SELECT pg_catalog.pg_advisory_xact_lock({lock})")); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT pg_catalog.to_regnamespace($1) IS NOT NULL", s.sc.ident).Scan(&exists); err != nil {
		return err
	}
	owner := "CURRENT_USER"
	if s.cfg.Owner != "" {
		owner = pgx.Identifier{s.cfg.Owner}.Sanitize()
	}
	if !exists {
		// An administrator may create the schema ahead of time, for a role
		// without CREATE on the database (docs/postgres-security.md).
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+s.sc.ident+" AUTHORIZATION "+owner); err != nil {
			return s.ownerErr(ctx, err)
		}
	}
	if err := s.checkOwnerIn(ctx, tx); err != nil {
		return err
	}
	if s.cfg.Owner != "" {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+owner); err != nil {
			return s.ownerErr(ctx, err)
		}
	}
	if _, err := tx.Exec(ctx, s.sc.sql(schemaDDL)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, s.sc.sql("INSERT INTO {s}.meta (version, lease_ttl_us) VALUES ($1, $2) ON CONFLICT DO NOTHING"), schemaVersion, s.leaseTTL.Microseconds())
	return err
}

// ownerErr explains a refused CREATE SCHEMA ... AUTHORIZATION or SET ROLE
// of Config.Owner: the store's role must be a member of it.
func (s *Store) ownerErr(ctx context.Context, err error) error {
	if s.cfg.Owner == "" || !isPrivilegeErr(err) {
		return err
	}
	return &coordination.Error{Kind: coordination.Fatal, Err: err, Reason: fmt.Sprintf(
		"pgstore: job %q: the store's role may not act as Config.Owner %q (%s); grant that role to the store's login role (GRANT %s TO <login role>), see docs/postgres-security.md",
		s.cfg.Job, s.cfg.Owner, redactedReason(err, s.cfg), pgx.Identifier{s.cfg.Owner}.Sanitize())}
}

// checkMeta checks the owner of the job's schema (checkOwner), then reads
// its meta row: false when the schema does not exist yet; Fatal when it
// was made by another layout or for another lease TTL.
func (s *Store) checkMeta(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	exists, err := s.checkOwner(ctx, pool)
	if err != nil {
		return false, err
	}
	if !exists {
		return false, nil
	}
	var version int
	var ttlUS int64
	err = pool.QueryRow(ctx, s.sc.sql("SELECT version, lease_ttl_us FROM {s}.meta")).Scan(&version, &ttlUS)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.fail(ctx, "reading "+s.sc.name+".meta", err)
	}
	if version != schemaVersion {
		return false, coordination.Errorf(coordination.Fatal, "pgstore: schema %s has layout version %d, this library reads version %d; use the library version that created the job", s.sc.name, version, schemaVersion)
	}
	if ttl := time.Duration(ttlUS) * time.Microsecond; ttl != s.leaseTTL {
		return false, coordination.Errorf(coordination.Fatal, "pgstore: job %q was started with a lease TTL of %s, this store's is %s; a job's LeaseDuration is fixed once it starts (remove the job with coordctl delete-job to change it)", s.cfg.Job, ttl, s.leaseTTL)
	}
	return true, nil
}

// JobLeaseTTL reads the lease TTL the job was started with, for tools
// (coordctl) that open a job without knowing its LeaseDuration: open the
// store with ExistingOnly and any valid lease TTL, then this. It is Fatal
// when the job's schema does not exist.
func JobLeaseTTL(ctx context.Context, cfg Config) (time.Duration, error) {
	st, err := New(cfg, MinLeaseTTL)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	pool, err := st.connect(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := st.checkOwner(ctx, pool); err != nil {
		return 0, err
	}
	var ttlUS int64
	err = pool.QueryRow(ctx, st.sc.sql("SELECT lease_ttl_us FROM {s}.meta")).Scan(&ttlUS)
	if err != nil {
		if isUndefined(err) || errors.Is(err, pgx.ErrNoRows) {
			return 0, coordination.Errorf(coordination.Fatal, "pgstore: job %q does not exist: no schema %s in this database; check the job name and the database", cfg.Job, st.sc.name)
		}
		return 0, st.fail(ctx, "reading "+st.sc.name+".meta", err)
	}
	return time.Duration(ttlUS) * time.Microsecond, nil
}
