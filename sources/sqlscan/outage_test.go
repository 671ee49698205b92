package sqlscan_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/spate-go/coordination/internal/pgtest"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/sources/sqlscan"
	"github.com/spate-go/coordination/store"
)

// serverOutages is how many times TestCopyRidesOutServerOutages takes the
// server down: one more than the default MaxAttempts (4) lets a split live
// through.
const serverOutages = 4

// A healthy split lives through MaxAttempts - 1 lost sessions: every server
// outage longer than the lease ends the worker's session, and the takeover
// of each split it held is charged one attempt (docs/protocol.md,
// "Sessions", "Claim candidates"), as in the property's schedules, where
// either fleet's server restart (2 to 3 s, more on a loaded machine) ends
// every session at the fleets' 1 s lease. The worker holds its splits
// through serverOutages outages of 1.5 leases each (its batch writes are
// stalled meanwhile) and then copies the table exactly once: with
// fleetMaxAttempts at the default 4 it ends Stalled, both splits
// quarantined.
func TestCopyRidesOutServerOutages(t *testing.T) {
	s := pgtest.Need(t, srv)
	if testing.Short() {
		t.Skip("server outages skipped in -short mode")
	}
	ctx := t.Context()
	const splits = 2
	src, dst := makeTables(ctx, t, s, 0, 400, 1)
	j := &copyJob{s: s, job: pgtest.UniqueName("outage"), dst: dst, columns: []string{"k", "v"}, splits: splits, cutEvery: -1,
		tbl: sqlscan.Table{Name: src, Key: "k", Kind: sqlscan.KeyInt, Columns: []string{"k", "v"}, BatchSize: 7}}
	w := j.start(t, "w1")
	defer func() {
		w.unstall()
		w.crash()
	}()
	w.setStall()
	tbl := j.tbl
	tbl.DB = w.db
	plan, err := sqlscan.Planner[int64](tbl, "scan", splits)
	if err != nil {
		t.Fatal(err)
	}
	fp := protocol.Fingerprint(plan.Fingerprint())
	// heldAt reports whether every split is held at an epoch above epoch.
	heldAt := func(epoch uint64) bool {
		es, err := w.st.List(ctx, store.Durable, protocol.SplitKey(""))
		if err != nil {
			return false // the server is starting
		}
		n := 0
		for _, e := range es {
			rec, err := protocol.DecodeSplit(e.Key, e.Value, fp)
			if err != nil || rec.Owner == "" || rec.Status != protocol.StatusRunnable || rec.Epoch <= epoch {
				return false
			}
			n++
		}
		return n == splits
	}
	for i := range uint64(serverOutages) {
		waitFor(t, fmt.Sprintf("both splits held at an epoch above %d", i), func() bool { return heldAt(i) })
		restarting.Lock()
		s.Kill()
		time.Sleep(3 * fleetLease / 2) // the outage, longer than the lease: the session ends
		err := s.Start()
		restarting.Unlock()
		if err != nil {
			t.Fatalf("restarting the server: %v", err)
		}
	}
	w.unstall()
	if !w.wait(copyDeadline) {
		t.Fatalf("the worker did not finish within %s of the last outage", copyDeadline)
	}
	if w.err != nil {
		t.Fatalf("after %d server outages: %v", serverOutages, w.err)
	}
	missing, dup, extra, err := sinkCounts(ctx, s, src, dst, "k")
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 || dup != 0 || extra != 0 {
		t.Fatalf("sink: %d rows missing, %d duplicated, %d extra; want 0, 0, 0", missing, dup, extra)
	}
}
