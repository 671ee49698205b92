package driver

// SourceReader is what [Run] needs: a [Source] that is also a [Reader]. Run
// takes it as its parameter type, so a source that lacks a Reader method is
// a compile error ("missing method StartLanes") rather than a failure at run
// time. A source that also implements [Pauser] lets Run pause its lanes
// while commits are not landing.
type SourceReader interface {
	Source
	Reader
}

// Reader is what [Run] needs of a [Source] beyond the Source methods: the
// readers themselves. Run calls it from its own goroutine only, never
// concurrently with a Source method; the lanes' readers run on the source's
// own goroutines, so Acked must be safe against them.
//
// Where reading starts: OpenSplit only builds a lane's state (its range and
// resume point); reading begins in StartLanes, once the driver has announced
// the lane. A lane that reaches the end of its input wakes the [Opening]'s
// Waker after making that visible to TakeFinishing, so Run commits it at
// once instead of at the next commit interval. The package doc's "Lanes,
// their two ids and their readers" says which id each method uses, and
// ExampleSourceReader shows a reader goroutine per lane.
type Reader interface {
	// StartLanes begins reading the newly opened lanes (from each lane's
	// resume point, as passed to OpenSplit). It must not block on data.
	StartLanes(lanes []Lane)
	// StopLanes stops reading the lanes and returns once they acknowledge
	// nothing more; it may wait for their readers to exit but must not
	// block on data. Run calls it for revoked lanes (their uncommitted
	// records replay elsewhere), for retired lanes (completed or handed off;
	// nothing is in flight), and for every open lane before the final
	// commit. CloseSplit of a lane's split may already have been called,
	// and a lane in the final call may never have been started.
	StopLanes(lanes []LaneID)
	// Acked returns the last acknowledged watermark of every lane that
	// acknowledged anything; entries of lanes the driver no longer holds are
	// ignored.
	Acked() []Watermark
}
