package protocol

// Status is a split record's status (docs/protocol.md, "Records").
type Status int

const (
	// StatusRunnable splits may be claimed.
	StatusRunnable Status = iota
	// StatusCompleted splits are fully delivered and committed; terminal.
	StatusCompleted
	// StatusQuarantined splits exhausted their delivery attempts; terminal.
	StatusQuarantined
)

// String returns the record spelling: "runnable", "completed" or "quarantined".
func (s Status) String() string {
	switch s {
	case StatusRunnable:
		return "runnable"
	case StatusCompleted:
		return "completed"
	case StatusQuarantined:
		return "quarantined"
	}
	return "unknown"
}

// parseStatus returns the status spelled s in a record, and false when s
// spells none.
func parseStatus[S string | []byte](s S) (Status, bool) {
	switch string(s) {
	case "runnable":
		return StatusRunnable, true
	case "completed":
		return StatusCompleted, true
	case "quarantined":
		return StatusQuarantined, true
	}
	return 0, false
}

// Terminal reports whether no write may ever change a record in this status.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusQuarantined }
