// Package objects reads a bucket of newline-delimited files (NDJSON, CSV
// without quoted newlines, logs) on any cloud gocloud.dev/blob opens (S3,
// GCS, Azure Blob, local files, memory), exactly as planned, on the lane
// kit ([lanes]).
//
// Two parts:
//
//   - [Planner] lists a prefix page by page as an open plan (the listing
//     cursor is the planner state, so a new leader resumes the listing and
//     work starts before it ends; the plan turns final with the last page).
//     It weights splits by bytes, groups small objects into one split and
//     divides large ones into byte ranges; each split pins its objects'
//     size, modification time and MD5 (the ETag of S3's single-part
//     objects).
//   - [NewSource] returns the [driver.SourceReader] that reads those splits
//     and hands every record to the user's [Func] with its object key and
//     byte offset.
//
// # Positions
//
// A split's positions are byte positions in a virtual space: the
// concatenation of its objects in listing order (a split of one large
// object's range is that object's own offsets). Every object starts at a
// record boundary, so the one rule below applies at any position, between
// objects and inside them alike, and a runtime cut at any byte is safe.
//
// # The record rule
//
// A record is a maximal run of bytes ending with '\n' (not part of the
// record) or with the end of its object (a last line without a newline); an
// empty object holds none, and an object ending in '\n' holds no empty
// record after it. A record's position is the position of its first byte
// (for an empty line, its '\n'). A record belongs to the range [start, end)
// that contains its first byte, and to no other: a range reads every record
// starting at or after start (when start is inside an object and not at its
// first byte, that is the first byte after the first '\n' at or after
// start-1) and before end, through to the record's end, past end if need
// be. This is Hadoop's TextInputFormat rule, stated for positions.
//
// # Change detection
//
// Every read of an object checks its pin: the reader's size and
// modification time (the same response as the bytes) and, when the plan
// pinned an MD5, the object's current MD5. An object that changed or
// vanished since planning makes its split poison ([lanes.Poison]) with an
// error naming the object and what changed; no byte of another version is
// delivered.
//
// # Compressed objects
//
// An object whose key ends in ".gz" is read whole through gzip, in a split
// of its own that is never cut; its records' offsets count decompressed
// bytes, and a lane resumed after a move decompresses from the start and
// skips what was acknowledged.
package objects
