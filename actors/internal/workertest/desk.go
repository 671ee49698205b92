package workertest

import (
	"sync"
)

// Desk stands in for the commit writer (worker.Env.Commits): it records
// what is posted to it.
type Desk struct {
	Mu     sync.Mutex
	Posted []any
}

// Post records msg.
func (d *Desk) Post(msg any) {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	d.Posted = append(d.Posted, msg)
}

// Posts returns a copy of what was posted so far.
func (d *Desk) Posts() []any {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return append([]any(nil), d.Posted...)
}
