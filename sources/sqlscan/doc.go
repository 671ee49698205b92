// Package sqlscan reads a database table (or any query with a key column)
// by key ranges over database/sql, on the lane kit (package lanes): a
// keyset range scan that a fleet of workers divides into weighted splits,
// with drains at batch boundaries and runtime splits at a key.
//
// A [Table] names the table, its key column and the columns to read. [Plan]
// divides the key space into splits without a full scan: on PostgreSQL
// from the planner's statistics (pg_stats.histogram_bounds, or a
// TABLESAMPLE SYSTEM sample when the table was never analyzed), elsewhere
// from the key's min and max (integers) or an ORDER BY ... LIMIT/OFFSET
// sample (other keys); each split's weight is its estimated row count.
// [NewSource] returns the lanes.Source that [driver.Run] takes: each lane
// reads batches
//
//	SELECT key, columns... FROM table WHERE key > $last AND key < $end ORDER BY key LIMIT n
//
// claims the batch's last key and hands the rows to a [Handler]: [Each]
// for at-least-once delivery (a crash or a forced move replays up to one
// commit interval), [Transact] or [CopyInto] for exactly-once delivery into
// PostgreSQL, where each batch's rows and the split's progress commit in
// one transaction of the job's pgstore database (coordination.TxCommitter).
// [TransactRange] is Transact for statements that select a batch's rows
// themselves by its first and last key (INSERT ... SELECT): the scan then
// reads each batch's bounds only, never its rows. A lane reads its next
// batch while the handler works on the one before.
//
// # Keys
//
// Integer keys ([KeyInt]) are lane offsets (lanes.Source[int64]); text,
// uuid and bytea keys ([KeyText], [KeyUUID], [KeyBytes]) are byte-string
// keys (lanes.Source[[]byte]) in bytewise order: on PostgreSQL a text key
// is compared COLLATE "C" (give the column, or an index on it, that
// collation, or each batch sorts), uuid and bytea compare bytewise
// already; SQLite compares text bytewise by default.
//
// # Rows inserted or deleted during a scan
//
// A batch reads the range as it is when that batch runs (each batch is its
// own statement, its own snapshot). A row deleted before its batch reads
// it is not delivered; one inserted at a key the lane has not passed yet
// is delivered, one inserted behind the lane is not. Integer splits are
// planned between the key's min and max + 1 at planning time: rows
// inserted beyond them later are not read. The scan is a copy of the
// table as it was at no single instant unless the table does not change
// while it runs.
package sqlscan
