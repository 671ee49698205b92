package workertest

import (
	"sync"

	"github.com/spate-go/coordination/actors/internal/worker"
)

// Desk stands in for the commit writer (worker.Env.Commits): it records
// what is posted to it and answers every commit with Result.
type Desk struct {
	Mu     sync.Mutex
	Posted []any
	Result worker.CommitResult
}

// Post records msg.
func (d *Desk) Post(msg any) {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	d.Posted = append(d.Posted, msg)
}

// Ask answers req with d.Result.
func (d *Desk) Ask(req worker.CommitRequest) worker.CommitResult {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return d.Result
}

// Posts returns a copy of what was posted so far.
func (d *Desk) Posts() []any {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return append([]any(nil), d.Posted...)
}
