package worker

// Tenancy is one held tenancy of a split: its epoch and the session that
// claimed it. Its one owner is the split writer's tenancy registry
// (actors/splitwriter/tenancy.go); its progress record belongs to the
// commit writer (see progressCell).
type Tenancy struct {
	Epoch uint64
	Nonce string
}
