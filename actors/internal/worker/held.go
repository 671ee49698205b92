package worker

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/wire"
)

// Tenancy is one held tenancy of a split: its epoch and the session that
// claimed it. (Its progress record belongs to the commit writer: see
// progressCell.)
type Tenancy struct {
	Epoch uint64
	Nonce string
}

// HeldView is the split-writer actor's derived view of the root's
// registry: which tenancies are held, fed only by the root's
// TenancyStarted and the ends its SurrenderTenancies carries (each applied
// as a TenancyEnded). It is not a second source of truth: the root sends
// both in the order it applied them and only for real changes (it filters
// stale ends), so the view applies them as they come. The split
// writer keeps it because its decisions read it at every step (the
// claimer's lane budget and claim inputs, the fences of held splits).
type HeldView map[coordination.SplitID]Tenancy

// Apply folds one registry change into the view.
func (h HeldView) Apply(msg any) {
	switch m := msg.(type) {
	case wire.TenancyStarted:
		h[m.Split] = Tenancy{Epoch: m.Epoch, Nonce: m.Nonce}
	case wire.TenancyEnded:
		delete(h, m.Split)
	}
}

// Holds reports whether the view holds tenancy (id, epoch).
func (h HeldView) Holds(id coordination.SplitID, epoch uint64) bool {
	t, ok := h[id]
	return ok && t.Epoch == epoch
}
