// Package pgstore is a [store.Store] on PostgreSQL 13 or later, through
// github.com/jackc/pgx/v5 and its pool: a production store for teams that
// run PostgreSQL rather than NATS JetStream.
//
// # Usage
//
//	st, err := pgstore.New(pgstore.Config{
//		DSN: "postgres://worker@db.internal:5432/pipelines?sslmode=verify-full",
//		Job: "backfill",
//	}, cfg.LeaseDuration)
//	...
//	c, err := actors.Spawn(engine, st, cfg)
//
// # Layout: a schema per job
//
// Each job lives in a schema of its own, coordination_<Job>, created on
// first use (idempotent; concurrent first starts serialize on an advisory
// lock). A schema rather than a job column: deleting a job is one DROP
// SCHEMA, GRANTs can be given per job, and no query of one job ever scans
// another's rows. The schema holds four objects: entries (every live key
// of both keyspaces, its value, revision and, for ephemeral keys, the
// server time it expires at), changes (the change log), the sequence
// revisions and meta (layout version, the job's lease TTL, the pruning
// point), plus the functions every write goes through. The job's lease TTL
// is fixed when its schema is created: a store with another TTL is Fatal.
//
// # Revisions and compare-and-swap
//
// Revisions come from the job's sequence, shared by both keyspaces, so they
// strictly increase per key across deletes. Create, Update and Delete are
// one statement each (a call of a PL/pgSQL function) that compares the
// revision and writes the entry and its change-log row in one transaction.
// Every write first takes the job's transaction-scoped advisory lock, so
// the writes of one job commit one at a time, in revision order: a reader's
// snapshot always holds a prefix of the change log, which is what lets a
// watch resume after the last revision it read with no gap. (Writes of
// different jobs do not contend.) A lost precondition is (ok=false,
// err=nil). Values are capped at 512 KiB ([Store.MaxValueSize]), as on
// natsstore, so that a job's records fit either production store; the
// change log keeps a copy of every value written within the retention, so
// the cap also bounds what one write adds to it.
//
// # Ephemeral keys expire by the server's clock
//
// An ephemeral key expires LeaseTTL after its last winning write by
// clock_timestamp() on the server, read after the write took the job's
// lock: one clock for the whole fleet, never a client's. Get, List, Create,
// Update and Delete treat an expired key as absent at once, whether or not
// it was swept yet, and a key is never absent before its TTL
// ([Store.ExpiryPrecision] is 0). Every store handle (unless ExistingOnly)
// runs a sweeper every min(LeaseTTL/4, 1s) that turns up to 1000 expired
// keys per pass into Delete changes and removes their rows; handles sweep
// concurrently and safely, the lock making each expiry one Delete. An
// expiry therefore reaches watchers as a Delete within one sweep interval
// plus a watch's wake-up after the TTL.
//
// # Watches: a change log, LISTEN/NOTIFY only as the wake-up
//
// A watch reads its snapshot and the change log's high-water mark in one
// statement, sends SnapshotDone, then reads the change log after that mark
// in revision order (the prefix filtered on the server), whenever a
// notification wakes it. Notifications are only wake-ups: they are lossy
// and do not survive a reconnect, so the watch always catches up by
// revision. Each store shares one LISTEN connection (outside the pool)
// among its watches; when it is lost, its watches break with Retryable and
// the coordinator re-watches with a fresh snapshot. A failed or slow
// catch-up is retried; a watch breaks only when none has landed for a lease. The change log is
// pruned by age: rows older than Config.Retention (10 minutes by default)
// go, up to 10,000 per pass, every tenth sweep. A watch that falls behind
// the pruning point breaks with Retryable. [Store.WatchHistory] replays
// what the log keeps (coordctl audit).
//
// # Faults and durability
//
// A lost connection is Retryable and the pool reconnects; an operation
// whose connection died before anything was sent is retried once. A write
// that failed with Retryable may have landed (its reply was lost), as the
// store contract says, and the error says which it was: a connection that
// could not be made (refused, or no answer within the connect timeout, a
// sixth of the lease between 1s and 5s unless the DSN sets
// connect_timeout) or that failed before the statement was sent wrote
// nothing; one lost during the statement may have. An error that is
// neither the server's failure nor the connection's (a Scan that does not
// fit the statement's columns, a syntax error, a type the driver cannot
// convert) is Fatal: a retry would fail the same way, so it surfaces once.
// Every statement is bounded on the server by
// statement_timeout and idle_in_transaction_session_timeout of LeaseTTL/2
// (the longest OpTimeout a coordinator with that lease may use), so no call
// holds the job's lock longer, even when its client is gone (a DSN may set
// them lower; 0 or higher is Fatal). The store
// assumes synchronous_commit = on (the default) or stronger: then a server
// restart or crash loses no write it acknowledged. It logs a warning when
// its session runs with off. With streaming replication, use synchronous
// replication (synchronous_standby_names) if a failover must not lose
// acknowledged writes either.
//
// # Privileges and ownership
//
// A worker's role needs CREATE on the database the first time (to create
// the job's schema) or a schema an administrator created for it, and then
// USAGE on the schema, SELECT, INSERT, UPDATE and DELETE on its tables,
// USAGE on its sequence and EXECUTE on its functions. Tools that only read
// (coordctl status, watch, audit) need USAGE on the schema and SELECT on
// its tables; open them with Config.ExistingOnly, which never creates a
// schema, never sweeps and never prunes. docs/postgres.md, "Running on
// PostgreSQL", lists the statements; docs/postgres-security.md gives
// per-job and per-team roles that keep jobs apart.
//
// Before it reads or runs anything of a job's schema the store checks, in
// the catalog, that the schema and every table, index, sequence and
// function in it are owned by Config.Owner (default: the store's own
// role; with ExistingOnly, the schema's owner), and refuses it otherwise,
// naming the object, its owner and the expected role: the functions run as
// their caller, so a schema squatted by another role would run that role's
// code as the worker. It creates a schema AUTHORIZATION that owner, and
// its functions with search_path = pg_catalog, pg_temp. Notifications
// carry the keyspace and the key's first segment ("0:job."), never a key
// or a value: any role that can connect may LISTEN to a channel. A value
// above the cap or a revision below 1 read from the job's tables (written
// outside the library) is Fatal naming the key.
package pgstore
