package splitwriter

import (
	"reflect"
	"testing"
	"testing/synctest"

	"github.com/spate-go/coordination/actors/internal/wire"
)

// The split writer tells the root what Healthy reports, on each change
// only: no session before this worker joined, then the session and the
// watches as the lease and the watch tell them; a session announced again
// while the watches stayed live is reported at once.
func TestTheSplitWriterTellsTheRootWhatHealthyReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, writer, _, sent := spawnLoneSplitWriter(t)
		for _, m := range []any{
			wire.WatchesChanged{Live: true},
			wire.SessionChanged{Live: true, Nonce: "n1"},
			wire.WatchesChanged{Live: true}, // no change: nothing told
			wire.SessionChanged{},
			wire.SessionChanged{Live: true, Nonce: "n2"},
			wire.WatchesChanged{Live: false},
		} {
			e.Send(writer, m)
		}
		synctest.Wait()
		var got []wire.HealthChanged
		for _, m := range sent() {
			if h, ok := m.(wire.HealthChanged); ok {
				got = append(got, h)
			}
		}
		want := []wire.HealthChanged{
			{Watches: true},
			{Session: true, Watches: true},
			{Watches: true},
			{Session: true, Watches: true},
			{Session: true},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("told the root %+v, want %+v", got, want)
		}
	})
}
