package pgstore

import (
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/store"
)

// TestCorruptRowsAreRefused writes by hand what the library never writes:
// an 8 MiB value and a negative revision. Every read path (Get, List, a
// watch's snapshot and its catch-up) reports a Fatal corrupt record naming
// the key instead of handing it on (a catch-up reads only revisions above
// its cursor, so only an oversized change can reach it), and a sequence set negative makes
// writes Fatal.
func TestCorruptRowsAreRefused(t *testing.T) {
	s := pgtest.Need(t, srv)
	t.Parallel()
	for _, c := range []struct {
		name, corrupt, want string
	}{
		{"oversized", "UPDATE {s}.entries SET value = decode(repeat('00', 8 << 20), 'hex') WHERE key = 'bad.k'", "8388608-byte value, above the store's cap"},
		{"negative revision", "UPDATE {s}.entries SET revision = -7 WHERE key = 'bad.k'", "revision -7, below 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, s, Config{}, testTTL)
			mustCreate(t, st, store.Durable, "bad.k", "v")
			mustCreate(t, st, store.Durable, "good.k", "v")
			exec(t, s, st.sc.sql(c.corrupt))
			_, _, err := st.Get(opCtx(t), store.Durable, "bad.k")
			wantKind(t, err, coordination.Fatal, `"bad.k"`, c.want, "outside the library")
			_, err = st.List(opCtx(t), store.Durable, "")
			wantKind(t, err, coordination.Fatal, `"bad.k"`, c.want)
			if l, err := st.List(opCtx(t), store.Durable, "good."); err != nil || len(l) != 1 {
				t.Errorf("List of the sound keys = %v, %v", l, err)
			}
			_, err = st.Watch(opCtx(t), store.Durable, "")
			wantKind(t, err, coordination.Fatal, `"bad.k"`, c.want)

			if c.name != "oversized" {
				return // a catch-up reads revisions above its cursor only
			}
			// The change log: a watch whose catch-up reads an oversized
			// change ends Fatal.
			w, err := st.Watch(opCtx(t), store.Durable, "good.")
			if err != nil {
				t.Fatal(err)
			}
			for ev := nextEvent(t, w, 5*time.Second); ev.Kind != store.SnapshotDone; ev = nextEvent(t, w, 5*time.Second) {
			}
			exec(t, s, st.sc.sql("INSERT INTO {s}.changes (revision, keyspace, key, value) VALUES (nextval('{s}.revisions'), 0, 'good.x', decode(repeat('00', 8 << 20), 'hex')); SELECT pg_notify({name}, '0')"))
			wantKind(t, endOf(t, w, 5*time.Second), coordination.Fatal, `"good.x"`, c.want)
		})
	}
	t.Run("negative sequence", func(t *testing.T) {
		st := newStore(t, s, Config{}, testTTL)
		mustCreate(t, st, store.Durable, "k", "v")
		exec(t, s, st.sc.sql("ALTER SEQUENCE {s}.revisions MINVALUE -100 RESTART WITH -10"))
		_, _, err := st.Create(opCtx(t), store.Durable, "k2", []byte("v"))
		wantKind(t, err, coordination.Fatal, "revision -10", "revisions", "setval")
	})
}
