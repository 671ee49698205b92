package driver_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/testkit"
)

// splitLedger is a ledgerSource whose lanes can be cut, wrongly: every
// residual descriptor it returns carries pad bytes of padding (so that
// with pad above the store's value cap no cut can ever be recorded), or,
// with equal, is the primary's.
type splitLedger struct {
	*ledgerSource
	lanes map[driver.LaneID]coordination.SplitID
	pad   int
	equal bool
	cuts  int // TrySplit calls that cut
}

func (s *splitLedger) OpenSplit(o driver.Opening) error {
	s.lanes[o.Lane] = o.Split.ID
	return s.ledgerSource.OpenSplit(o)
}

func (s *splitLedger) Remaining(lane driver.LaneID) uint64 {
	if l, ok := s.ledgerSource.lanes[s.lanes[lane]]; ok && !l.draining {
		return uint64(l.hi - l.next)
	}
	return 0
}

func (s *splitLedger) TrySplit(lane driver.LaneID, keep float64) (driver.Cut, bool, error) {
	l, ok := s.ledgerSource.lanes[s.lanes[lane]]
	if !ok || l.draining || l.hi-l.next < 2 {
		return driver.Cut{}, false, nil
	}
	at := max(l.next+1, l.next+int64(keep*float64(l.hi-l.next)))
	cut := driver.Cut{
		Primary:        fmt.Appendf(nil, "%d-%d", l.lo, at),
		Residual:       fmt.Appendf(nil, "%d-%d%s", at, l.hi, strings.Repeat(" ", s.pad)),
		ResidualWeight: uint64(l.hi - at),
	}
	if s.equal {
		cut.Residual = cut.Primary
	}
	l.hi = at // from now on the lane never reads past the cut
	s.cuts++
	return cut, true, nil
}

// acked is every open lane's acknowledged watermark (rows are acknowledged
// as they are delivered).
func (s *splitLedger) acked() []driver.Watermark {
	var ws []driver.Watermark
	for _, id := range slices.Sorted(maps.Keys(s.ledgerSource.lanes)) {
		l := s.ledgerSource.lanes[id]
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.next})
	}
	return ws
}

// runSplitting is a control loop like ledgerWorker.run that also reports
// the lanes' remaining work and acts on cut requests, as driver.Run does.
func runSplitting(id string, d *driver.Driver, src *splitLedger) string {
	for {
		ev, err := d.PollEvents(50 * time.Millisecond)
		if err != nil {
			if coordination.KindOf(err) == coordination.Retryable {
				continue
			}
			_ = d.Shutdown(nil)
			return fmt.Sprintf("%s: PollEvents: %v", id, err)
		}
		if _, ok := ev.(driver.Drained); ok {
			if err := d.Shutdown(nil); err != nil {
				return fmt.Sprintf("%s: Shutdown: %v", id, err)
			}
			return "drained"
		}
		if ws := src.read(); len(ws) > 0 {
			time.Sleep(readTime)
			if err := d.Commit(ws); err != nil {
				_ = d.Shutdown(nil)
				return fmt.Sprintf("%s: Commit: %v", id, err)
			}
		}
		d.ReportRemaining()
		if _, err := d.Cut(src.acked()); err != nil {
			_ = d.Shutdown(nil)
			return fmt.Sprintf("%s: Cut: %v", id, err)
		}
	}
}

// Issue #37: a source whose cuts can never be recorded (a residual
// descriptor over the store's value cap) made CommitCut latch Fatal on its
// owner, and the next owner of the split was asked again and died the same
// way: every worker in turn; a residual byte-equal to its primary was
// accepted and the job completed with the rest of the range never read.
// Now such a cut is refused, the split handed back un-cut and read by its
// next tenancy: both workers finish the ledger, no row lost, nothing Fatal.
func TestEndToEndCutsThatCanNeverBeRecordedAreRefusedAndTheJobCompletes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pad   int
		equal bool
	}{{"residual over the value cap", 2048, false}, {"residual equal to its primary", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, err := actor.NewEngine(actor.NewEngineConfig())
				if err != nil {
					t.Fatal(err)
				}
				st := memstore.New(testkit.HarnessConfig().LeaseDuration, memstore.WithMaxValueSize(1024))
				t.Cleanup(func() { _ = st.Close() })
				logs := &syncBuffer{}
				log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				out := &deliveries{count: map[int64]int{}}
				job := ledgerPlanner{rows: 2000, splits: 2}
				ids := []string{"w1", "w2"}
				srcs := make([]*splitLedger, len(ids))
				results := make([]string, len(ids))
				var wg sync.WaitGroup
				for i, id := range ids {
					cfg := testkit.HarnessConfig()
					cfg.InstanceID, cfg.Logger, cfg.StartupGrace = id, log, 0
					coord, err := actors.Spawn(e, st, cfg)
					if err != nil {
						t.Fatal(err)
					}
					srcs[i] = &splitLedger{ledgerSource: &ledgerSource{out: out, lanes: map[coordination.SplitID]*ledgerLane{}},
						lanes: map[driver.LaneID]coordination.SplitID{}, pad: tc.pad, equal: tc.equal}
					d := driver.New(coord, srcs[i], driver.WithLogger(log.With("driver", id)))
					if err := d.Start(job); err != nil {
						t.Fatal(err)
					}
					wg.Go(func() { results[i] = runSplitting(id, d, srcs[i]) })
				}
				wg.Wait()
				if want := []string{"drained", "drained"}; !slices.Equal(results, want) {
					t.Errorf("outcomes = %q, want %q", results, want)
				}
				dups := out.checkRows(t, int64(job.rows))
				text := logs.String()
				if srcs[0].cuts+srcs[1].cuts == 0 || !strings.Contains(text, "cut refused") {
					t.Errorf("no cut was tried and refused (TrySplit cuts %d, %d); the test does not exercise refusals", srcs[0].cuts, srcs[1].cuts)
				}
				if strings.Contains(text, "level=ERROR") {
					t.Errorf("an error was logged")
				}
				t.Logf("%d cuts tried and refused, %d duplicate deliveries", srcs[0].cuts+srcs[1].cuts, dups)
				if t.Failed() {
					t.Logf("logs:\n%s", text)
				}
				synctest.Wait()
			})
		})
	}
}

// Issue #37: a presence key "worker.rogue" advertising 4096 lanes, kept
// alive by a peer with write access but never claiming, made the leader
// ask the one real worker for 4,078 residuals of one split in 8 s. Only
// members that claimed in their session count their lanes: within the
// same 8 s the real worker's split is cut for its own free lanes and the
// rogue's one lane at most.
func TestEndToEndARoguePresenceDoesNotShredASplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := actor.NewEngine(actor.NewEngineConfig())
		if err != nil {
			t.Fatal(err)
		}
		st := memstore.New(testkit.HarnessConfig().LeaseDuration)
		t.Cleanup(func() { _ = st.Close() })
		logs := &syncBuffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		ctx := context.Background()
		cfg := testkit.HarnessConfig()
		cfg.InstanceID, cfg.Logger, cfg.StartupGrace, cfg.MaxInFlight = "w1", log, 0, 4
		coord, err := actors.Spawn(e, st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := &splitLedger{ledgerSource: &ledgerSource{out: &deliveries{count: map[int64]int{}}, lanes: map[coordination.SplitID]*ledgerLane{}},
			lanes: map[driver.LaneID]coordination.SplitID{}}
		d := driver.New(coord, src, driver.WithLogger(log))
		if err := d.Start(ledgerPlanner{rows: 1_000_000, splits: 1}); err != nil {
			t.Fatal(err)
		}
		var rev store.Revision
		rogue := protocol.EncodePresence(protocol.PresenceRecord{Nonce: "rogue-session", MaxInFlight: 4096})
		until := time.Now().Add(time.Minute)
		for time.Now().Before(until) {
			if rev == 0 && len(d.Assignments()) > 0 {
				// The rogue appears once the real worker reads its split.
				var ok bool
				if rev, ok, err = st.Create(ctx, store.Ephemeral, protocol.WorkerKey("rogue"), rogue); err != nil || !ok {
					t.Fatalf("rogue presence: %v, %v", ok, err)
				}
				until = time.Now().Add(8 * time.Second)
			}
			if _, err := d.PollEvents(50 * time.Millisecond); err != nil && coordination.KindOf(err) != coordination.Retryable {
				t.Fatalf("PollEvents: %v", err)
			}
			if ws := src.read(); len(ws) > 0 {
				time.Sleep(readTime)
				if err := d.Commit(ws); err != nil {
					t.Fatalf("Commit: %v", err)
				}
			}
			d.ReportRemaining()
			if _, err := d.Cut(src.acked()); err != nil {
				t.Fatalf("Cut: %v", err)
			}
			if rev == 0 {
				continue
			}
			if r, ok, err := st.Update(ctx, store.Ephemeral, protocol.WorkerKey("rogue"), rogue, rev); err == nil && ok {
				rev = r // the rogue's presence is kept alive
			}
		}
		splits, err := st.List(ctx, store.Durable, "job.split.")
		if err != nil {
			t.Fatal(err)
		}
		residuals, held := len(splits)-1, 0
		for _, e := range splits {
			if strings.Contains(string(e.Value), `"owner":"w1"`) {
				held++
			}
		}
		t.Logf("%d residuals in 8 s with a rogue presence of 4096 lanes; %d of the %d split records held by w1", residuals, held, len(splits))
		if residuals == 0 || residuals > cfg.MaxInFlight {
			t.Errorf("%d residuals of the one split in 8 s; want at least one and at most %d (the real worker's lanes and the rogue's one)", residuals, cfg.MaxInFlight)
		}
		_ = d.Shutdown(nil)
		synctest.Wait()
	})
}
