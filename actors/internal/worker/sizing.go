package worker

import "maps"

// maxSizeHint bounds SizeHint: the plan record's planned count is written
// by peers (and could be by an operator), so a wrong one must not make a
// worker allocate without bound. 2^17 covers the largest job the sizing
// guidance names (100,000 splits); a larger view grows past it as usual.
const maxSizeHint = 1 << 17

// SizeHint is how many split records a worker's views are sized for once
// it joined a job whose plan record counts planned of them: a view
// filled by the snapshot then grows no table on the way.
func SizeHint(planned uint64) int { return int(min(planned, maxSizeHint)) }

// Sized returns m when it holds hint entries or more, else a copy of it
// made with room for hint.
func Sized[K comparable, V any](m map[K]V, hint int) map[K]V {
	if len(m) >= hint {
		return m
	}
	sized := make(map[K]V, hint)
	maps.Copy(sized, m)
	return sized
}
