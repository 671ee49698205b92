package testkit

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// Workers that claim lose nothing to the unclaimed rule (docs/protocol.md,
// "Members that do not claim"): three workers that start together under
// the startup hold, their lanes full; a newcomer given its share by drains
// (its splits in transit meanwhile), whose spec reads fail for half a lease
// from then (no claim can start), then whose next claim is lost and the one
// after lands only after its OpTimeout (each retried at its next
// heartbeat); then every split completed. The leader never penalises anyone, and the job completes.
func TestFleetWorkersThatClaimAreNeverPenalised(t *testing.T) {
	var logs logBuffer
	RunFleet(t, func(t *testing.T, f *Fleet) {
		splits, p := newJob(12)
		var ms []*Member
		for _, id := range []string{"w1", "w2", "w3"} {
			m := f.Start(id, p, setMaxInFlight(4))
			m.Policy = Policy{Work: WorkCommit, Revoke: RevokeConsent}
			ms = append(ms, m)
		}
		f.Until("every split is held", func() bool { return allHeld(f, splits, "") })
		var specs *Fault
		f.ArmNextStart(func(fs *FaultStore) { specs = fs.FailReads(store.Durable, protocol.PrefixSpec) }) // a claim reads the spec first
		w4 := f.Start("w4", p, setMaxInFlight(4))
		w4.Policy = Policy{Work: WorkCommit, Revoke: RevokeConsent}
		f.Until("w4 is given splits", func() bool {
			e, ok, err := f.Store().Get(context.Background(), store.Durable, protocol.AssignKey("w4"))
			if err != nil || !ok {
				return false
			}
			a, err := protocol.DecodeAssignment(protocol.AssignKey("w4"), e.Value)
			return err == nil && len(a.Splits) > 0
		})
		f.Advance(f.Config().LeaseDuration / 2)
		w4.Store().Remove(specs)
		claims := Match{Keyspace: store.Durable, Prefix: protocol.PrefixSplit}
		w4.Store().DropNextWrite(claims)
		w4.Store().LandLateNextWrite(claims)
		f.Until("w4 holds its share", func() bool { return allHeld(f, splits, "") && len(w4.HeldIDs()) == 3 })
		f.Advance(2 * f.Config().LeaseDuration)
		for _, m := range append(ms, w4) {
			m.Policy.Work = WorkComplete
		}
		f.Until("the verdict", f.AllSettled)
		for _, m := range f.Live() {
			if _, ok := m.Verdict().(coordination.AllComplete); !ok {
				t.Fatalf("%s verdict %#v, want AllComplete", m.ID(), m.Verdict())
			}
		}
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "left work unclaimed") {
				t.Errorf("a worker that claims was penalised: %s", line)
			}
		}
	}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithUntilBudget(60*time.Second))
}
