package actors

import (
	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
)

// storeRolledBack is the Fatal of a store rollback (docs/protocol.md, "Store
// rollback"): a read showed key at revision got, below revision seen, which
// this worker already applied or wrote. A key's revision never decreases, so
// the store lost writes it had acknowledged; nothing about the source is
// wrong.
func storeRolledBack(ks store.Keyspace, key string, got, seen uint64) error {
	return coordination.Errorf(coordination.Fatal,
		"store rollback: %s key %s is at revision %d, below revision %d this worker already saw; the store lost acknowledged writes "+
			"(a NATS server restarted from an older store directory, or lost unsynced writes in a power loss): "+
			"set sync_interval: always on every NATS server, or restore the job from scratch",
		ks, key, got, seen)
}
