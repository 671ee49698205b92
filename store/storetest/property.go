package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/spate-go/coordination/store"
)

// The properties share one store across all their checks (newStore may be
// expensive, for example new NATS buckets): each check works under its own
// key prefix, so checks never see each other's keys.

// modelEntry is the sequential model of one key in one keyspace.
type modelEntry struct {
	live    bool
	value   []byte
	rev     store.Revision   // the live revision, or the last one before it died
	lastRev store.Revision   // the highest revision any write of the key returned
	revs    []store.Revision // every revision the key held
	written time.Time        // when its last winning write started
}

// model is the sequential model the store must match: outcomes, values and
// revision ordering.
type model struct {
	ttl     time.Duration
	entries map[store.Keyspace]map[string]*modelEntry
}

func newModel(ttl time.Duration, keys []string) *model {
	m := &model{ttl: ttl, entries: map[store.Keyspace]map[string]*modelEntry{}}
	for _, ks := range keyspaces() {
		m.entries[ks] = map[string]*modelEntry{}
		for _, k := range keys {
			m.entries[ks][k] = &modelEntry{}
		}
	}
	return m
}

// mayHaveExpired reports whether a live ephemeral key may have expired. The
// model allows expiry from TTL/2 after a write on, which no check should
// reach: the property checks operations, the TTL checks check expiry.
func (m *model) mayHaveExpired(ks store.Keyspace, e *modelEntry) bool {
	return ks == store.Ephemeral && e.live && time.Since(e.written) >= m.ttl/2
}

// won records a winning write that returned rev and started at start.
func (e *modelEntry) won(t tester, what string, value []byte, rev store.Revision, start time.Time) {
	t.Helper()
	if rev <= e.lastRev {
		t.Fatalf("%s took revision %d, not above the key's earlier %d; revisions must strictly increase per key", what, rev, e.lastRev)
	}
	e.live, e.value, e.rev, e.lastRev, e.written = true, value, rev, rev, start
	e.revs = append(e.revs, rev)
}

// drawExpected picks an expected revision for a guarded write: the live one,
// a stale one, 0, or one never returned.
func drawExpected(t *rapid.T, e *modelEntry) store.Revision {
	switch rapid.IntRange(0, 3).Draw(t, "expected") {
	case 0:
		return e.rev
	case 1:
		if len(e.revs) > 1 {
			return rapid.SampledFrom(e.revs[:len(e.revs)-1]).Draw(t, "stale")
		}
		return 1
	case 2:
		return 0
	default:
		return e.lastRev + store.Revision(rapid.IntRange(1, 3).Draw(t, "future"))
	}
}

// testPropertyModel runs random sequences of Create, Update, Get, Delete
// (guarded and not) and List on three keys of both keyspaces, and checks each
// outcome, value and revision against the sequential model.
func testPropertyModel(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		prefix := fmt.Sprintf("m%d.", checks)
		keys := []string{prefix + "a", prefix + "b", prefix + "c"}
		m := newModel(st.LeaseTTL(), keys)
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			ks := rapid.SampledFrom(keyspaces()).Draw(rt, "keyspace")
			key := rapid.SampledFrom(keys).Draw(rt, "key")
			e := m.entries[ks][key]
			switch op := rapid.SampledFrom([]string{"create", "update", "get", "delete", "list"}).Draw(rt, "op"); op {
			case "create":
				v := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "value")
				start := time.Now()
				rev, ok := create(rt, st, ks, key, v)
				what := fmt.Sprintf("Create(%s, %q)", ks, key)
				switch {
				case !e.live && !ok:
					rt.Fatalf("%s lost on an absent key", what)
				case e.live && ok && !m.mayHaveExpired(ks, e):
					rt.Fatalf("%s won on a key live at revision %d", what, e.rev)
				}
				if ok {
					e.won(rt, what, v, rev, start)
				}
			case "update":
				v := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "value")
				expected := drawExpected(rt, e)
				start := time.Now()
				rev, ok := update(rt, st, ks, key, v, expected)
				what := fmt.Sprintf("Update(%s, %q, rev %d)", ks, key, expected)
				want := e.live && expected == e.rev
				switch {
				case want && !ok && !m.mayHaveExpired(ks, e):
					rt.Fatalf("%s lost on a key live at that revision", what)
				case want && !ok:
					e.live = false // it expired
				case !want && ok:
					rt.Fatalf("%s won; the key is live=%v at revision %d", what, e.live, e.rev)
				}
				if ok {
					e.won(rt, what, v, rev, start)
				}
			case "get":
				got, ok := get(rt, st, ks, key)
				what := fmt.Sprintf("Get(%s, %q)", ks, key)
				switch {
				case ok && !e.live:
					rt.Fatalf("%s found %s at revision %d; the key is absent", what, short(got.Value), got.Revision)
				case !ok && e.live && !m.mayHaveExpired(ks, e):
					rt.Fatalf("%s found nothing; want %s at revision %d", what, short(e.value), e.rev)
				case !ok:
					e.live = false
				default:
					wantEntry(rt, what, got, e.value, e.rev)
				}
			case "delete":
				expected := drawExpected(rt, e)
				ok := del(rt, st, ks, key, expected)
				what := fmt.Sprintf("Delete(%s, %q, rev %d)", ks, key, expected)
				matches := expected == 0 || expected == e.rev
				switch {
				case !e.live && !ok:
					rt.Fatalf("%s lost on an absent key; an absent key always wins", what)
				case e.live && matches && !ok:
					rt.Fatalf("%s lost on a key live at revision %d", what, e.rev)
				case e.live && !matches && ok && !m.mayHaveExpired(ks, e):
					rt.Fatalf("%s won on a key live at revision %d", what, e.rev)
				}
				if ok {
					e.live = false
				}
			case "list":
				got := list(rt, st, ks, prefix)
				for k, ge := range got {
					me, known := m.entries[ks][k]
					if !known || !me.live {
						rt.Fatalf("List(%s, %q) holds %q, which is absent", ks, prefix, k)
					}
					wantEntry(rt, fmt.Sprintf("List(%s, %q)", ks, prefix), ge, me.value, me.rev)
				}
				for k, me := range m.entries[ks] {
					if _, listed := got[k]; me.live && !listed {
						if !m.mayHaveExpired(ks, me) {
							rt.Fatalf("List(%s, %q) omits %q, live at revision %d", ks, prefix, k, me.rev)
						}
						me.live = false
					}
				}
			}
		}
	})
	t.Logf("%d rapid checks (shrinking included)", checks)
}

// testPropertyReplay writes randomly to a few keys before and after a watch
// starts, then checks that folding the watch's events as the coordinator does
// (see replica) reproduces List, and that every write made after the watch
// started was delivered (each Put with its revision, each Delete above the
// revision it removed) or superseded by a later delivered event of its key.
func testPropertyReplay(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	ttl, early := st.LeaseTTL(), earlyExpiry(t, st)
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		prefix := fmt.Sprintf("w%d.", checks)
		ks := rapid.SampledFrom(keyspaces()).Draw(rt, "keyspace")
		keys := []string{prefix + "a", prefix + "b", prefix + "ab", prefix + "c"}
		began := time.Now()
		live := map[string]store.Revision{}
		type change struct {
			key string
			rev store.Revision // of the Put, or of the entry a Delete removed
			del bool
		}
		step := func() change {
			key := rapid.SampledFrom(keys).Draw(rt, "key")
			v := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "value")
			rev, isLive := live[key]
			switch {
			case !isLive:
				live[key] = mustCreate(rt, st, ks, key, v)
			case rapid.Bool().Draw(rt, "delete"):
				guard := rev
				if rapid.Bool().Draw(rt, "unguarded") {
					guard = 0
				}
				mustDelete(rt, st, ks, key, guard)
				delete(live, key)
				return change{key, rev, true}
			default:
				live[key] = mustUpdate(rt, st, ks, key, v, rev)
			}
			return change{key: key, rev: live[key]}
		}
		// On Ephemeral, writes stop once half of the shortest life a key
		// may have (its TTL less the declared precision) has passed, so
		// that no key expires under a write on a loaded machine.
		calm := func() bool { return ks == store.Durable || time.Since(began) < (ttl-early)/2 }
		for range rapid.IntRange(0, 10).Draw(rt, "writes before the watch") {
			if calm() {
				step()
			}
		}
		s, stop := openStream(rt, st, ks, prefix)
		defer stop()
		var after []change
		for range rapid.IntRange(0, 20).Draw(rt, "writes after the watch") {
			if calm() {
				after = append(after, step())
			}
		}
		finals := map[string]final{}
		for _, c := range after {
			if c.del {
				finals[c.key] = final{rev: c.rev, deleted: true}
			}
		}
		for k, rev := range live {
			finals[k] = final{rev: rev}
		}

		r := newReplica()
		puts := map[change]bool{}
		newest := map[string]store.Revision{} // highest revision delivered per key
		s.awaitFinal(finals, func(ev store.WatchEvent) {
			if ev.Kind != store.SnapshotDone && !strings.HasPrefix(ev.Entry.Key, prefix) {
				rt.Fatalf("watch of %q delivered %q", prefix, ev.Entry.Key)
			}
			r.apply(ev)
			if ev.Kind == store.Put {
				puts[change{key: ev.Entry.Key, rev: ev.Entry.Revision}] = true
			}
			newest[ev.Entry.Key] = max(newest[ev.Entry.Key], ev.Entry.Revision)
		})
		if ks == store.Ephemeral && time.Since(began) >= ttl/2 {
			return // an expiry may be on its way; the TTL checks cover expiry
		}
		for _, c := range after {
			// A write may be collapsed into a later one of the same key
			// (history-1 backends drop superseded revisions), never lost.
			if !c.del && !puts[c] && newest[c.key] <= c.rev {
				rt.Fatalf("the Put of %q at revision %d, written after the watch started, was neither delivered nor superseded by a later event", c.key, c.rev)
			}
			if c.del && newest[c.key] <= c.rev {
				rt.Fatalf("the Delete of %q (live at revision %d), made after the watch started, was neither delivered nor superseded by a later event", c.key, c.rev)
			}
		}
		sameEntries(rt, "replayed watch vs List", r.live, list(rt, st, ks, prefix))
	})
	t.Logf("%d rapid checks (shrinking included)", checks)
}
