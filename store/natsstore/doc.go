// Package natsstore is the production [store.Store]: two NATS JetStream
// key-value buckets per job, coordination_<Job>_state for the Durable
// keyspace and coordination_<Job>_lease for the Ephemeral one.
//
// # Usage
//
//	st, err := natsstore.New(natsstore.Config{
//		Servers:     []string{"tls://nats-1:4222", "tls://nats-2:4222"},
//		Job:         "backfill",
//		Credentials: natsstore.Credentials{CredsFile: "/etc/nats/worker.creds"},
//		TLS:         &natsstore.TLS{RootCA: "/etc/nats/ca.pem"},
//		Replicas:    3,
//	}, cfg.LeaseDuration) // the lease TTL must equal Config.LeaseDuration
//	defer st.Close()
//
// New does no I/O. The first operation connects, checks the server and
// creates (or adopts) the buckets within that operation's context; later
// operations reuse the connection, which reconnects by itself. Instead of
// Servers, Config.Conn may hand over an established connection, which the
// caller keeps and closes after Close; Config.Options adds nats.go client
// options to the connection the store dials.
//
// # Guarantees
//
//   - The contract of package store: a lost precondition is (ok=false,
//     nil); errors are *coordination.Error of kind Retryable or Fatal and
//     keep their cause for errors.Is. A compare-and-swap conflict is
//     recognised both as NATS error code 10071 and as 10164 (replicated
//     buckets). A guarded delete of an absent key wins.
//   - Revisions are the buckets' stream sequences: they strictly increase
//     per key across deletes, expiries and re-creates.
//   - Ephemeral keys expire a lease TTL after their last write: the lease
//     bucket's TTL applies to every message, so each write restarts the
//     key's clock. Expiry reaches watches as a Delete through the server's
//     limit markers, about one second after the TTL at worst. Per-key TTLs
//     are never used: they apply to a key's create only and would be lost
//     on its next update.
//   - Values of up to 512 KiB ([Store.MaxValueSize]); a larger one is Fatal
//     before anything is sent.
//   - Watches filter by plain string prefix ("sp" matches "split.a" and
//     "spec.b") and deliver SnapshotDone even when nothing matches. A watch
//     never drops events silently: it breaks with Retryable when the
//     connection is lost or its consumer falls more than 65536 events
//     behind, and the owner re-watches. List is one ordered snapshot.
//   - A watch's snapshot (and a listing) ends once its replay has caught up
//     with the bucket's last message under the prefix, as the stream reports
//     it after the replay got there, never on the client's end-of-replay
//     marker alone: the server's pending count, which the marker follows,
//     runs low while writes land, so the marker can come early. Writes
//     made during the replay may land in the snapshot.
//   - Replicated buckets are read from their stream leader (direct gets are
//     turned off), so a Get never returns a state older than a write that
//     completed before it started. Watches and listings are served by a
//     consumer the server may place on a follower; their snapshot ends only
//     once it has reached the leader's last sequence, so a replica behind
//     the leader delays it.
//   - On replicated buckets, a write the server cannot check yet because
//     the key has another write in flight (code 10164) is retried a few
//     times after re-reading the key, so that only a real conflict loses.
//   - Connection timing follows the lease TTL: after a loss the client
//     retries every LeaseTTL/20 plus up to as much jitter (each at most
//     2s), so it is back within LeaseTTL/10 of the server's return, well
//     inside the LeaseDuration/3 between two lease renewals; each dial and
//     handshake gives up after a third of the lease at most, so a server
//     that does not answer does not hold up the next; it pings
//     every LeaseTTL/3 (at least 10s), so a connection that died silently
//     is noticed within about one lease (30s at least).
//   - While the connection is down, an operation is held, not sent, until
//     it is back: at most until its context ends, and at most LeaseTTL/2
//     (the longest OpTimeout a coordinator with this lease may use) when
//     the context has no earlier deadline. One that gives up returns
//     Retryable "not connected to NATS ... nothing was sent", and nothing
//     of it lands later: the store's own connection buffers nothing while
//     reconnecting. A request the client refuses because the connection
//     dropped at that moment is Retryable "request not sent".
//   - A loss of the connection is logged at Warn ("connection to NATS
//     lost, reconnecting") and its recovery at Info with the downtime; a
//     connection logs at most one loss per 10s, and the next loss line
//     counts the ones held back ("suppressed"). Server URLs in errors and
//     logs never show their userinfo (see [RedactURL]).
//   - Authentication and authorization failures, unreadable credential or
//     certificate files, failed certificate verification, a server without
//     JetStream and a server older than 2.11 are Fatal at once, with a
//     reason naming the credentials, file or server. Network failures and
//     timeouts are Retryable, and a failed connection attempt is not
//     remembered: the next operation tries again.
//
// # Non-guarantees
//
//   - Durability is the server's: NATS flushes to disk periodically by
//     default, so a coordinated power loss can roll back acknowledged
//     writes, and with them ownership and progress. Servers hosting
//     coordination buckets should run with sync_interval: always.
//   - Expiry happens on the server in real time; a mock clock
//     (coordination.Config.Clock) cannot drive it.
//   - A write whose operation failed with Retryable (for example a timeout
//     while the server was failing over) may or may not have landed.
//   - On replicated buckets a compare-and-swap can still lose spuriously
//     under heavy load (after the bounded retries); callers treat it as a
//     lost race and re-read.
//   - A watch delivers the latest state of each key without gaps, but not
//     every intermediate revision: a revision superseded before the
//     watch's consumer reaches it arrives only as its successor. The state
//     bucket keeps Config.History revisions per key (1 by default) and
//     [Store.WatchHistory] delivers them all, for audits.
//   - A job's lease TTL is fixed once its buckets exist: a store with
//     another lease TTL is Fatal until the buckets are removed. An existing
//     bucket with another replica count is adopted as it is (with a
//     warning).
//   - A connection passed as Config.Conn keeps its own settings: with its
//     reconnect buffer (on by default in nats.go) a write the client took
//     just as the connection dropped may land after its operation returned
//     Retryable, and Close may wait for the client's request timeout while
//     it is reconnecting. The store warns when it reconnects slower than a
//     third of the lease.
//   - Keys must be valid NATS KV keys ([-/_=.A-Za-z0-9], no empty
//     dot-separated token); any other key is Fatal.
package natsstore
