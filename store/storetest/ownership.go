package storetest

import (
	"bytes"
	"testing"
)

// testValueOwnership checks who owns values (docs: "Value ownership" in
// package store), both ways: the caller may change a slice it passed to
// Create or Update once the call returned, and a receiver may change a value
// the store handed out, without either change reaching the store; and the
// store never changes a value it handed out, when the key is written later.
func testValueOwnership(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	for _, ks := range keyspaces() {
		// The caller's slices.
		v := []byte("caller-1")
		rev := mustCreate(t, st, ks, "own.k", v)
		scribble(v)
		e, _ := get(t, st, ks, "own.k")
		wantEntry(t, ks.String()+" Get after the caller changed the slice it created with", e, []byte("caller-1"), rev)
		v = []byte("caller-2")
		rev = mustUpdate(t, st, ks, "own.k", v, rev)
		scribble(v)
		e, _ = get(t, st, ks, "own.k")
		wantEntry(t, ks.String()+" Get after the caller changed the slice it updated with", e, []byte("caller-2"), rev)
		l := list(t, st, ks, "own.")
		wantEntry(t, ks.String()+" List after the caller changed its slices", l["own.k"], []byte("caller-2"), rev)
		s, stop := openStream(t, st, ks, "own.")
		snap := s.snapshot()
		wantEntry(t, ks.String()+" watch snapshot after the caller changed its slices", snap["own.k"], []byte("caller-2"), rev)

		// Values handed out: the receiver changes them.
		scribble(e.Value)
		scribble(l["own.k"].Value)
		scribble(snap["own.k"].Value)
		again, _ := get(t, st, ks, "own.k")
		wantEntry(t, ks.String()+" Get after receivers changed the values handed out", again, []byte("caller-2"), rev)
		wantEntry(t, ks.String()+" List after receivers changed the values handed out", list(t, st, ks, "own.")["own.k"], []byte("caller-2"), rev)

		// Values handed out: the store must not change them later.
		held, _ := get(t, st, ks, "own.k")
		heldList := list(t, st, ks, "own.")["own.k"]
		next := mustUpdate(t, st, ks, "own.k", []byte("store-v3"), rev)
		tail := s.nextNew()
		wantEntry(t, ks.String()+" watch tail", tail.Entry, []byte("store-v3"), next)
		mustUpdate(t, st, ks, "own.k", []byte("store-v4"), next)
		stop()
		for what, got := range map[string][]byte{"a Get": held.Value, "a List": heldList.Value, "a watch event": tail.Entry.Value} {
			want := []byte("caller-2")
			if what == "a watch event" {
				want = []byte("store-v3")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: the value %s returned changed from %q to %q when the key was written later; a store must never change a value it handed out", ks, what, want, got)
			}
		}
	}
}

// scribble overwrites every byte of v.
func scribble(v []byte) {
	for i := range v {
		v[i] = 'X'
	}
}
