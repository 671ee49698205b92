package protocol

import "github.com/spate-go/coordination"

// This file holds the size checks of docs/protocol.md "Size limits": before writing a spec,
// progress or assignment value, its encoded size n is compared with the
// store's value cap. A cap of 0 (or less) means no cap. Over the cap is
// Fatal, never Retryable.

// CheckSpecSize returns a Fatal *coordination.Error when split id's encoded
// spec record of n bytes is above cap, else nil.
func CheckSpecSize(id coordination.SplitID, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"split %s: spec record is %d bytes, above the store's value cap of %d bytes; shrink the descriptor",
		id, n, cap)
}

// CheckProgressSize returns a Fatal *coordination.Error when split id's
// encoded progress record of n bytes is above cap, else nil.
func CheckProgressSize(id coordination.SplitID, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"split %s: progress record is %d bytes, above the store's value cap of %d bytes; keep resume state smaller",
		id, n, cap)
}

// CheckAssignmentSize returns a Fatal *coordination.Error when the encoded
// assignment of n bytes for instance is above cap, else nil.
func CheckAssignmentSize(instance string, n, cap int) error {
	if !overCap(n, cap) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"assignment for instance %s is %d bytes, above the store's value cap of %d bytes; use shorter split ids or a lower MaxInFlight",
		instance, n, cap)
}

func overCap(n, cap int) bool { return cap > 0 && n > cap }
