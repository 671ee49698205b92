package actors

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/workertest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/store"
)

// A split record the view saw deleted fails the worker only once a read
// confirms it is gone (docs/protocol.md, "Missing records"): a snapshot or a
// listing that missed a live key keeps the worker running and the split
// held; a real deletion is Fatal naming the key.
func TestASplitRecordDeletionIsConfirmedBeforeItIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", workertest.FinalPlan("a", "b"))
		ms := []*member{w}
		r.until("w1 holds both", 10*time.Second, ms, func() bool { return len(w.held) == 2 })
		// A delete the store never made, as a listing that missed the key.
		r.e.Send(w.c.v.PIDs.SplitWriter, recordmsg.RecordsChanged{Records: []recordmsg.RecordChanged{{Split: "a", Deleted: true}}})
		r.advance(time.Second)
		w.pump(t)
		if len(w.held) != 2 {
			t.Fatalf("held %v after a spurious delete, want both", w.held)
		}
		key := protocol.SplitKey("a")
		e, _, gerr := r.st.Get(context.Background(), store.Durable, key)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if ok, err := r.st.Delete(context.Background(), store.Durable, key, e.Revision); !ok || err != nil {
			t.Fatalf("delete: %v %v", ok, err)
		}
		r.advance(time.Second)
		var err error
		for i := 0; i < 10 && err == nil; i++ { // the failure comes once earlier events are drained
			_, err = w.c.Poll()
		}
		if coordination.KindOf(err) != coordination.Fatal || !strings.Contains(err.Error(), key+": split record deleted outside the library") {
			t.Fatalf("Poll = %v, want a Fatal naming %s", err, key)
		}
	})
}
