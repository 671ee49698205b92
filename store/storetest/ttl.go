package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/spate-go/coordination/store"
)

// testKeepAlive updates a key every TTL/3 for 3 TTLs: every update must win,
// which proves the key never expired.
func testKeepAlive(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	rev := mustCreate(t, st, store.Ephemeral, "lease.k", []byte("0"))
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for i := 1; i <= 9; i++ {
		<-tick.C
		next, ok := update(t, st, store.Ephemeral, "lease.k", []byte{byte('0' + i)}, rev)
		if !ok {
			t.Fatalf("renewal %d (every %v, TTL %v) lost; the key expired although it was written every TTL/3", i, ttl/3, ttl)
		}
		rev = next
	}
	e, ok := get(t, st, store.Ephemeral, "lease.k")
	if !ok {
		t.Fatal("kept-alive key is absent after the last renewal")
	}
	wantEntry(t, "kept-alive key", e, []byte("9"), rev)
}

// testExpires leaves a key silent: it must expire within the TTL plus
// expirySlack, become absent for every operation, and be re-creatable.
func testExpires(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	rev := mustCreate(t, st, store.Ephemeral, "lease.k", []byte("v"))
	acked := time.Now() // the store cannot have stamped the write any later
	mustCreate(t, st, store.Durable, "lease.k", []byte("durable"))
	eventually(t, ttl+expirySlack(ttl)-time.Since(acked), "silent ephemeral key expired (TTL "+ttl.String()+")", func() bool {
		_, live := get(t, st, store.Ephemeral, "lease.k")
		return !live
	})
	if l := list(t, st, store.Ephemeral, ""); len(l) != 0 {
		t.Fatalf("List after expiry holds %d keys", len(l))
	}
	if _, ok := update(t, st, store.Ephemeral, "lease.k", []byte("x"), rev); ok {
		t.Fatal("Update of an expired key won")
	}
	if !del(t, st, store.Ephemeral, "lease.k", rev) {
		t.Fatal("guarded Delete of an expired key lost; an absent key always wins")
	}
	again := mustCreate(t, st, store.Ephemeral, "lease.k", []byte("again"))
	if again <= rev {
		t.Fatalf("re-create after expiry took revision %d, not above %d", again, rev)
	}
	if _, ok := get(t, st, store.Durable, "lease.k"); !ok {
		t.Fatal("the durable key of the same name expired")
	}
}

// testWatchExpiry watches a key expire: the expiry reaches the tail as a
// Delete above the key's last revision, and a later snapshot omits the key.
func testWatchExpiry(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	written := time.Now()
	r1 := mustCreate(t, st, store.Ephemeral, "lease.k", []byte("v1"))
	rev := mustUpdate(t, st, store.Ephemeral, "lease.k", []byte("v2"), r1)
	acked := time.Now() // the latest the store can have stamped the last write
	s, stop := openStream(t, st, store.Ephemeral, "lease.")
	defer stop()
	snap := s.snapshot()
	e, inSnap := snap["lease.k"]
	switch {
	case inSnap:
		wantEntry(t, "snapshot", e, []byte("v2"), rev)
	case time.Since(written) < ttl:
		t.Fatal("snapshot taken within the TTL lacks the live key")
	default:
		t.Fatal("the watch started only after the key's TTL; the machine is too slow for this check")
	}
	limit := ttl + expirySlack(ttl)
	deadline := time.NewTimer(limit - time.Since(acked))
	defer deadline.Stop()
	for done := false; !done; {
		select {
		case ev, ok := <-s.w.Events():
			if !ok {
				t.Fatalf("watch ended (Err %v) before the expiry", s.w.Err())
			}
			s.check(ev)
			if ev.Kind == store.Put && ev.Entry.Revision == rev {
				continue // a duplicate
			}
			if ev.Kind != store.Delete || ev.Entry.Key != "lease.k" {
				t.Fatalf("tail event %v of %q; want the expiry's Delete of lease.k", ev.Kind, ev.Entry.Key)
			}
			if ev.Entry.Revision <= rev {
				t.Fatalf("expiry Delete at revision %d, not above the key's last revision %d", ev.Entry.Revision, rev)
			}
			done = true
		case <-deadline.C:
			t.Fatalf("no Delete within %v of the last write (TTL %v)", limit, ttl)
		}
	}
	later, stopLater := openStream(t, st, store.Ephemeral, "")
	defer stopLater()
	if snap := later.snapshot(); len(snap) != 0 {
		t.Fatalf("snapshot after the expiry holds %d keys; want none (no expired keys)", len(snap))
	}
	if l := list(t, st, store.Ephemeral, "lease."); len(l) != 0 {
		t.Fatalf("List after the expiry holds %d keys", len(l))
	}
}

// testLiveUntilTTL writes a key once and reads it until its TTL (less the
// store's ExpiryPrecision) has passed: every read that returned before then
// must find it. Renewals every TTL/3, as in testKeepAlive, would hide a key
// that expires at half its TTL; a key written once does not. A round in
// which fewer than 5 reads returned in time checked too little (a loaded
// machine): it is run again with a new key, up to liveUntilRounds rounds.
func testLiveUntilTTL(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	precision := earlyExpiry(t, st)
	reads := 0
	for round := 1; round <= liveUntilRounds; round++ {
		if reads = readUntilTTL(t, st, fmt.Sprintf("once.k%d", round), ttl, precision); reads >= 5 {
			return
		}
		t.Logf("round %d: only %d reads landed within the key's TTL %v", round, reads, ttl)
	}
	t.Fatalf("only %d reads landed within the key's TTL %v in each of %d rounds; the machine is too slow for this check", reads, ttl, liveUntilRounds)
}

// liveUntilRounds bounds the rounds of testLiveUntilTTL.
const liveUntilRounds = 3

// readUntilTTL writes key once and reads it until ttl less precision has
// passed since the write, failing t if a read that returned before then
// did not find it; it returns how many did.
func readUntilTTL(t *testing.T, st store.Store, key string, ttl, precision time.Duration) int {
	written := time.Now()
	rev := mustCreate(t, st, store.Ephemeral, key, []byte("v"))
	liveUntil := written.Add(ttl - precision)
	tick := time.NewTicker(max(ttl/20, 5*time.Millisecond))
	defer tick.Stop()
	reads := 0
	for {
		e, live := get(t, st, store.Ephemeral, key)
		returned := time.Now()
		if returned.After(liveUntil) {
			return reads
		}
		reads++
		if !live {
			t.Fatalf("a key written once was absent %v after its write, before its TTL %v (less the precision %v the store declares); declare an ExpiryPrecision if the store expires early", returned.Sub(written).Round(time.Millisecond), ttl, precision)
		}
		wantEntry(t, "key written once", e, []byte("v"), rev)
		<-tick.C
	}
}

// testLosingWritesNeverRearm keeps losing writes on a key, a Create of the
// live key, an Update at a stale revision and a Delete guarded by a stale
// revision, every TTL/4: none of them may re-arm its TTL, so the key must
// still expire within the TTL plus expirySlack of its last winning write.
func testLosingWritesNeverRearm(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	r1 := mustCreate(t, st, store.Ephemeral, "rearm.k", []byte("v1"))
	mustUpdate(t, st, store.Ephemeral, "rearm.k", []byte("v2"), r1)
	written := time.Now() // the latest the store can have stamped the write
	limit := written.Add(ttl + expirySlack(ttl))
	tick := time.NewTicker(ttl / 4)
	defer tick.Stop()
	for i := 0; ; i++ {
		if _, live := get(t, st, store.Ephemeral, "rearm.k"); !live {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("the key is still live %v after its last winning write (TTL %v) while only losing Creates, Updates and guarded Deletes touched it; a losing write must not re-arm the TTL", time.Since(written).Round(time.Millisecond), ttl)
		}
		switch i % 3 {
		case 0:
			if _, ok := create(t, st, store.Ephemeral, "rearm.k", []byte("lost")); ok {
				return // it expired meanwhile
			}
		case 1:
			if _, ok := update(t, st, store.Ephemeral, "rearm.k", []byte("lost"), r1); ok {
				t.Fatalf("Update at the stale revision %d won", r1)
			}
		default:
			if !del(t, st, store.Ephemeral, "rearm.k", r1) {
				continue // lost, as it should while the key is live
			}
			return // the key was absent: it expired meanwhile
		}
		<-tick.C
	}
}

// testSnapshotAfterExpiry waits for a silent key to expire as Get sees it,
// then at once starts a watch: its snapshot, and a listing, must omit the
// key. A store that hides expired keys from reads but removes them lazily
// would still hand them to a new watch.
func testSnapshotAfterExpiry(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl := st.LeaseTTL()
	mustCreate(t, st, store.Ephemeral, "snapx.k", []byte("v"))
	acked := time.Now() // the store cannot have stamped the write any later
	eventually(t, ttl+expirySlack(ttl)-time.Since(acked), "silent ephemeral key expired (TTL "+ttl.String()+")", func() bool {
		_, live := get(t, st, store.Ephemeral, "snapx.k")
		return !live
	})
	s, stop := openStream(t, st, store.Ephemeral, "snapx.")
	defer stop()
	if snap := s.snapshot(); len(snap) != 0 {
		t.Fatalf("a watch started right after Get found the key expired has %d keys in its snapshot; the snapshot must hold no expired key", len(snap))
	}
	if l := list(t, st, store.Ephemeral, "snapx."); len(l) != 0 {
		t.Fatalf("List right after the expiry holds %d keys", len(l))
	}
}
