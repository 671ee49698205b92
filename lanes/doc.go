// Package lanes is a ready-made lane runtime for work read in position
// order within ranges: a source in twenty lines, with drains, pauses,
// runtime splits and completion built in (Beam's OffsetRangeTracker and
// ByteKeyRangeTracker, Flink's SourceReaderBase).
//
// A user supplies the ranges and a read function. The ranges come from a
// planner: [Planner] over [Offsets] or [Keys] (or splits of one's own, each
// with an id, a [Range], a weight and opaque [Split.Meta] bytes), or an
// open planner of one's own that returns [Split.Spec]s. The read function
// ([ReadFunc]) reads one lane from [Lane.Next] onward and claims each
// record's position with [Lane.Claim] before it processes it:
//
//	src := lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[int64]) error {
//		for row := lane.Next(); lane.Claim(row); row++ {
//			process(row)
//		}
//		return nil
//	}, lanes.Options{})
//	plan, err := lanes.Planner(lanes.Offsets("rows", 0, 1_000_000, 100))
//	err = driver.Run(ctx, coord, src, driver.WithPlanner(plan))
//
// The [Source] it returns is what [driver.Run] takes. It keeps a reader
// goroutine per lane, the acknowledged watermarks, pauses while commits do
// not land, end of input with the driver's Waker, cooperative drains at the
// next claim, the remaining-work estimate and runtime cuts at a position
// past everything claimed, completion at the cut end, resume validation,
// and the descriptor and progress encodings.
//
// # Claims
//
// A claim of position p claims every position up to p and acknowledges
// everything claimed before it: a reader claims a record (or a batch's
// last record) and then processes it, and by the time it claims again (or
// returns nil) what it claimed is processed. A claim returns false when the
// range ended before p (its end, or a runtime cut), or the lane is draining
// or stopping: the reader then returns nil. Positions must increase and may
// be sparse (claiming 17 after 3 is fine). A batch reader that read past a
// cut it did not see is called again from its last claim with the new end,
// so no record below the cut is skipped.
//
// # Positions
//
// Two kinds: int64 offsets (rows, byte offsets, sequence numbers), whose
// watermark is the offset one past the last acknowledged one; and byte-string
// keys (compared bytewise), whose watermark counts claims and whose resume
// state holds the last acknowledged key. [Lane.Last] gives that key for a
// reader that asks for keys greater than it (SQL's key > $last).
//
// # Delivery
//
// Every position is delivered at least once. A cooperative move (a drain)
// or a runtime cut replays nothing; a crash or a forced move replays at most
// what was acknowledged after the split's last durable commit (one commit
// interval).
package lanes
