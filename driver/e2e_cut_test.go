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
				if strings.Contains(text, "left work unclaimed") {
					t.Errorf("a worker that claims was penalised for leaving work unclaimed")
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
// ask the one real worker for 4,078 residuals of one split in 8 s, and the
// residuals placed on the rogue waited as long as it lived: the job never
// completed. Only members that claimed in their session count their lanes,
// so within 8 s the split is cut for the real worker's free lanes and the
// rogue's one lane at most; and a member that leaves a split published to
// it unclaimed for LeaseDuration loses its free lanes (docs/protocol.md,
// "Members that do not claim"), so the job completes, every row read, with
// the rogue alive throughout.
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
		out := &deliveries{count: map[int64]int{}}
		src := &splitLedger{ledgerSource: &ledgerSource{out: out, lanes: map[coordination.SplitID]*ledgerLane{}},
			lanes: map[driver.LaneID]coordination.SplitID{}}
		d := driver.New(coord, src, driver.WithLogger(log))
		job := ledgerPlanner{rows: 4000, splits: 1} // about 14 s over four lanes of 70 rows/s
		if err := d.Start(job); err != nil {
			t.Fatal(err)
		}
		// The job must complete within this bound of the rogue's arrival:
		// its reading time and, per probation of the rogue, a lease.
		const bound = time.Minute
		var rev store.Revision
		rogue := protocol.EncodePresence(protocol.PresenceRecord{Nonce: "rogue-session", MaxInFlight: 4096})
		var appeared time.Time
		drained, peak := false, 0
		// residuals counts the residual split records, and the runnable
		// split records: the cutter asks no more residuals than lanes would
		// idle, so the runnable ones never outnumber the real worker's lanes
		// and the rogue's one (a shredded split had thousands).
		residuals := func() (all, runnable int) {
			splits, err := st.List(ctx, store.Durable, "job.split.")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range splits {
				rec, err := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint(job.Fingerprint()))
				if err != nil {
					t.Fatal(err)
				}
				if rec.Parent != "" {
					all++
				}
				if rec.Status == protocol.StatusRunnable {
					runnable++
				}
			}
			return all, runnable
		}
		for !drained && (appeared.IsZero() || time.Since(appeared) < bound) {
			if rev == 0 && len(d.Assignments()) > 0 {
				// The rogue appears once the real worker reads its split.
				var ok bool
				if rev, ok, err = st.Create(ctx, store.Ephemeral, protocol.WorkerKey("rogue"), rogue); err != nil || !ok {
					t.Fatalf("rogue presence: %v, %v", ok, err)
				}
				appeared = time.Now()
			}
			ev, err := d.PollEvents(50 * time.Millisecond)
			if err != nil && coordination.KindOf(err) != coordination.Retryable {
				t.Fatalf("PollEvents: %v", err)
			}
			if _, ok := ev.(driver.Drained); ok {
				drained = true
				break
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
			_, runnable := residuals()
			peak = max(peak, runnable)
			if r, ok, err := st.Update(ctx, store.Ephemeral, protocol.WorkerKey("rogue"), rogue, rev); err == nil && ok {
				rev = r // the rogue's presence is kept alive
			} else {
				t.Fatalf("the rogue's presence lapsed: %v, %v", ok, err)
			}
		}
		all, _ := residuals()
		t.Logf("with a rogue presence of 4096 lanes: %d residuals in all, at most %d split records runnable at once; drained %v, %v after the rogue appeared",
			all, peak, drained, time.Since(appeared).Round(100*time.Millisecond))
		if all == 0 || peak > cfg.MaxInFlight+1 {
			t.Errorf("%d residuals, at most %d split records runnable at once; want a cut, and at most %d runnable (the real worker's lanes and the rogue's one)", all, peak, cfg.MaxInFlight+1)
		}
		if !drained {
			t.Errorf("the job did not complete within %v of the rogue's arrival: splits placed on a member that never claims wait as long as it lives", bound)
		}
		penalties := 0
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "left work unclaimed") {
				penalties++
				if !strings.Contains(line, "peer=rogue") {
					t.Errorf("a worker that claims was penalised: %s", line)
				}
			}
		}
		t.Logf("the rogue was penalised %d times", penalties)
		if penalties == 0 {
			t.Errorf("the rogue was never penalised for leaving work unclaimed")
		}
		out.checkRows(t, int64(job.rows))
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
		_ = d.Shutdown(nil)
		synctest.Wait()
	})
}
