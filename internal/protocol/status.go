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

// Terminal reports whether no write may ever change a record in this status.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusQuarantined }
