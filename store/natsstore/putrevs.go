package natsstore

import (
	"sync"

	"github.com/spate-go/coordination/store"
)

// maxKnownPuts bounds each keyspace's map of known put revisions; the map
// is a cache and starts over when full.
const maxKnownPuts = 1 << 18

// knownPuts remembers, per keyspace and key, the latest revision this store
// has seen as a put (written by it, read, listed or watched). A stream
// sequence that was a put of a key stays one forever, so a remembered
// revision never goes wrong; it only lets Update skip a read.
//
// Why Update needs it: KV update checks only that the key's last message
// has the expected sequence, and a delete or expiry marker is a message
// too. An update whose expected revision is a marker's would therefore
// resurrect a deleted key. Update sends at once when the expected revision
// is a known put, and otherwise reads the key first.
type knownPuts struct {
	mu   sync.Mutex
	revs [2]map[string]store.Revision // by keyspace
}

// note records rev as a put of key.
func (k *knownPuts) note(ks store.Keyspace, key string, rev store.Revision) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.revs[ks]
	if m == nil || len(m) >= maxKnownPuts {
		m = make(map[string]store.Revision)
		k.revs[ks] = m
	}
	if rev > m[key] {
		m[key] = rev
	}
}

// known reports whether rev is the latest known put of key.
func (k *knownPuts) known(ks store.Keyspace, key string, rev store.Revision) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return rev != 0 && k.revs[ks][key] == rev
}

// forget drops key after this store deleted it.
func (k *knownPuts) forget(ks store.Keyspace, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.revs[ks], key)
}
