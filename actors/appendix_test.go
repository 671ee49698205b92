package actors

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/messages"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// faultyStore lets a test decide the fate of the next durable update of one
// key: apply it and report Retryable anyway (maybe-landed), or fail the
// read that follows a lost CAS.
type faultyStore struct {
	*memstore.Store
	mu          sync.Mutex
	landThenErr string // key: the next durable Update lands, then reports Retryable
	failGet     string // key: the next durable Get fails
}

func (s *faultyStore) Update(ctx context.Context, ks store.Keyspace, key string, v []byte, rev store.Revision) (store.Revision, bool, error) {
	s.mu.Lock()
	hit := ks == store.Durable && key == s.landThenErr
	if hit {
		s.landThenErr = ""
	}
	s.mu.Unlock()
	r, ok, err := s.Store.Update(ctx, ks, key, v, rev)
	if hit && ok && err == nil {
		return 0, false, coordination.Errorf(coordination.Retryable, "injected: reply lost after the write landed")
	}
	return r, ok, err
}

func (s *faultyStore) Get(ctx context.Context, ks store.Keyspace, key string) (store.Entry, bool, error) {
	s.mu.Lock()
	hit := ks == store.Durable && key == s.failGet
	if hit {
		s.failGet = ""
	}
	s.mu.Unlock()
	if hit {
		return store.Entry{}, false, coordination.Errorf(coordination.Retryable, "injected: read failed")
	}
	return s.Store.Get(ctx, ks, key)
}

func (r *rig) startOn(st store.Store, id string, p coordination.Planner) *member {
	r.tb.Helper()
	c, err := Spawn(r.e, st, testConfig(r.tb, r.clk, id))
	if err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(c.Abort)
	if err := c.Start(p); err != nil {
		r.tb.Fatal(err)
	}
	return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
}

// Appendix A 13: a conflict caused by this worker's own maybe-landed write is
// adopted, not reported as Fenced.
func TestMaybeLandedCommitIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		fs := &faultyStore{Store: r.st}
		w := r.startOn(fs, "w1", finalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		fs.mu.Lock()
		fs.landThenErr = protocol.ProgressKey("a")
		fs.mu.Unlock()
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("maybe-landed commit: %v", err)
		}
		// The same progress again: the record already carries it (§18.1 a).
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); err != nil {
			t.Fatalf("re-commit of the landed progress: %v", err)
		}
		fs.mu.Lock()
		fs.landThenErr = protocol.ProgressKey("a")
		fs.mu.Unlock()
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 7}); coordination.KindOf(err) != coordination.Retryable {
			t.Fatalf("second maybe-landed commit: %v", err)
		}
		// Further progress: the stale CAS loses, the record still names this
		// worker at its epoch, so it is adopted and retried once (§18.2 b).
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 9}); err != nil {
			t.Fatalf("commit after a maybe-landed one: %v", err)
		}
		w.pump(t)
		if _, ok := hasEvent[coordination.Lost](w); ok {
			t.Fatalf("Lost after an own write: %v", w.evs)
		}
		e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
		rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if err != nil || rec.Watermark == nil || *rec.Watermark != 9 {
			t.Fatalf("record %+v, %v", rec, err)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// casEnv is a minimal env for driving the write functions directly.
func casEnv(tb testing.TB, st store.Store) *env {
	tb.Helper()
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "me"
	v := &env{cfg: cfg, clk: clock.NewMock(), id: "me", nonce: "n", log: discardLogger(), out: &outbox{}}
	v.session.Store(&v.nonce)
	v.st = &guardedStore{Store: st, halted: &v.halted}
	v.fp.Store(protocol.Fingerprint("job:v1"))
	return v
}

// put writes value at key (create when rev is 0, else update at rev) and
// returns the new revision.
func put(tb testing.TB, st store.Store, key string, value []byte, rev uint64) uint64 {
	tb.Helper()
	var r store.Revision
	var ok bool
	var err error
	if rev == 0 {
		r, ok, err = st.Create(context.Background(), store.Durable, key, value)
	} else {
		r, ok, err = st.Update(context.Background(), store.Durable, key, value, store.Revision(rev))
	}
	if err != nil || !ok {
		tb.Fatalf("put %s: %v %v", key, ok, err)
	}
	return uint64(r)
}

// A lost commit CAS whose progress record still carries this tenancy is
// adopted and retried once; one that already carries the intended write (or
// this tenancy's completion) is a success; a failed classifying read is
// Retryable; a later fence is Fenced.
func TestCasProgressConflicts(t *testing.T) {
	fp := protocol.Fingerprint("job:v1")
	fence := protocol.FreshProgress("a", fp, "me", 2, 0)
	own := fence.Commit(coordination.SplitProgress{Watermark: 5}, 0)
	done := fence.Commit(coordination.SplitProgress{Watermark: 5, Completed: true}, 0)
	later := own.Fence("peer", 3, 0)
	tests := []struct {
		name    string
		moved   protocol.ProgressRecord // what lands after the writer's view
		p       coordination.SplitProgress
		failGet bool
		want    casOutcome
		adopted bool
	}{
		{"own maybe-landed write: adopt and retry", own, coordination.SplitProgress{Watermark: 9}, false, casLanded, false},
		{"the intended write already landed", own, coordination.SplitProgress{Watermark: 5}, false, casLanded, true},
		{"this tenancy's completion already landed", done, coordination.SplitProgress{Watermark: 9}, false, casLanded, true},
		{"adopted record re-checks the watermark", own, coordination.SplitProgress{Watermark: 4}, false, casFatal, false},
		{"a failed read is retryable", own, coordination.SplitProgress{Watermark: 9}, true, casUnconfirmed, false},
		{"a later fence is a fence", later, coordination.SplitProgress{Watermark: 9}, false, casFenced, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &faultyStore{Store: memstore.New(30 * time.Second)}
			v := casEnv(t, fs)
			key := protocol.ProgressKey("a")
			rev := put(t, fs, key, protocol.EncodeProgress(fence), 0)
			put(t, fs, key, protocol.EncodeProgress(tt.moved), rev)
			if tt.failGet {
				fs.failGet = key
			}
			d := casProgress(context.Background(), v, "a", progressCell{epoch: 2, prog: fence, rev: rev}, tt.p)
			if d.outcome != tt.want || d.adopted != tt.adopted {
				t.Fatalf("outcome %v adopted %v (err %v), want %v adopted %v", d.outcome, d.adopted, d.err, tt.want, tt.adopted)
			}
			switch tt.want {
			case casUnconfirmed:
				if coordination.KindOf(d.err) != coordination.Retryable {
					t.Fatalf("err %v", d.err)
				}
			case casFenced:
				if coordination.KindOf(d.err) != coordination.Fenced || !strings.Contains(d.err.Error(), "another worker owns it now; nothing was written") {
					t.Fatalf("err %v", d.err)
				}
			}
		})
	}
}

// Appendix A 15: CommitFinal returns one result per entry in order, and
// entries for the same split apply in entry order.
func TestCommitFinalOneResultPerEntryInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a", "b"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		errs := w.c.CommitFinal([]coordination.Commit{
			{Split: "a", Progress: coordination.SplitProgress{Watermark: 3}},
			{Split: "zz", Progress: coordination.SplitProgress{Watermark: 1}},
			{Split: "a", Progress: coordination.SplitProgress{Watermark: 4}},
			{Split: "b", Progress: coordination.SplitProgress{Watermark: 8, Completed: true}},
		})
		if len(errs) != 4 || errs[0] != nil || coordination.KindOf(errs[1]) != coordination.Fenced || errs[2] != nil || errs[3] != nil {
			t.Fatalf("results %v", errs)
		}
		e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
		rec, _ := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
		if rec.Watermark == nil || *rec.Watermark != 4 {
			t.Fatalf("same-split entries out of order: %+v", rec)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// Appendix A 3, 16, 17: Release keeps the worker a member; Depart hands back
// every owned split, including unpolled gains, deletes presence, and the
// worker never writes its presence key again.
func TestReleaseKeepsMembershipDepartLeavesForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a", "b"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 2 })
		if err := w.c.Release("a", "not-held"); err != nil {
			t.Fatal(err)
		}
		delete(w.held, "a")
		// Still a member and still assigned: it claims the split again.
		r.until("re-gained", 10*time.Second, []*member{w}, func() bool { _, ok := w.held["a"]; return ok })
		if g := w.held["a"]; g.Epoch != 2 {
			t.Fatalf("re-gained %+v", g)
		}
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); !ok {
			t.Fatal("presence gone after Release")
		}
		// Depart without naming anything: both splits are handed back.
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
		for _, id := range []coordination.SplitID{"a", "b"} {
			e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.SplitKey(id))
			rec, _ := protocol.DecodeSplit(e.Key, e.Value, protocol.Fingerprint("job:v1"))
			if rec.Owner != "" || rec.Nonce != "" {
				t.Fatalf("split %s not handed back: %+v", id, rec)
			}
		}
		r.advance(3 * time.Second)
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.WorkerKey("w1")); ok {
			t.Fatal("presence written after Depart")
		}
		if _, ok, _ := r.st.Get(context.Background(), store.Ephemeral, protocol.KeyLeader); ok {
			t.Fatal("leadership kept after Depart")
		}
	})
}

// logCapture records every log record's level and message.
type logCapture struct {
	mu   *sync.Mutex
	recs *[]string
	next slog.Handler
}

func (h logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h logCapture) Handle(ctx context.Context, r slog.Record) error {
	worker := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "instance" {
			worker = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, r.Level.String()+" "+r.Message+" instance="+worker)
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	h.next = h.next.WithAttrs(as)
	return withAttrs{logCapture: h, attrs: as}
}

func (h logCapture) WithGroup(name string) slog.Handler { return h }

// withAttrs keeps attributes added by Logger.With visible to Handle.
type withAttrs struct {
	logCapture
	attrs []slog.Attr
}

func (h withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(h.attrs...)
	return h.logCapture.Handle(ctx, r)
}

func (h withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return withAttrs{logCapture: h.logCapture, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// §28: every record carries worker; a normal join, completion and
// departure logs nothing at warn or error, and announces peers.
func TestNormalPathLogsNoFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		var mu sync.Mutex
		var recs []string
		h := logCapture{mu: &mu, recs: &recs, next: slog.NewTextHandler(t.Output(), nil)}
		p := finalPlan("a", "b")
		start := func(id string) *member {
			cfg := testConfig(t, r.clk, id)
			cfg.Logger = slog.New(h)
			c, err := Spawn(r.e, r.st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Abort)
			if err := c.Start(p); err != nil {
				t.Fatal(err)
			}
			return &member{c: c, held: map[coordination.SplitID]coordination.Gained{}}
		}
		w1, w2 := start("w1"), start("w2")
		ms := []*member{w1, w2}
		seen := map[*member]int{}
		r.until("one each", 10*time.Second, ms, func() bool {
			for _, m := range ms { // a well-behaved driver drains what is revoked
				evs := m.evs[seen[m]:]
				seen[m] = len(m.evs)
				for _, ev := range evs {
					if rv, ok := ev.(coordination.RevokeRequested); ok {
						if _, held := m.held[rv.Split]; held {
							if err := m.c.ReleaseDrained(rv.Split); err != nil {
								t.Fatal(err)
							}
							delete(m.held, rv.Split)
						}
					}
				}
			}
			return len(w1.held) == 1 && len(w2.held) == 1
		})
		for _, m := range ms {
			for id := range m.held {
				if err := m.c.Commit(id, coordination.SplitProgress{Watermark: 1, Completed: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		r.until("verdicts", 10*time.Second, ms, func() bool { return verdictOf(w1) != nil && verdictOf(w2) != nil })
		for _, m := range ms {
			if err := m.c.Depart(); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		joined := false
		for _, rec := range recs {
			if strings.HasPrefix(rec, "WARN") || strings.HasPrefix(rec, "ERROR") {
				t.Errorf("normal path logged %q", rec)
			}
			if !strings.Contains(rec, "instance=w") {
				t.Errorf("record without worker: %q", rec)
			}
			if strings.HasPrefix(rec, "INFO peer joined") {
				joined = true
			}
		}
		if !joined {
			t.Errorf("no 'peer joined' in %v", recs)
		}
	})
}

// A call refers to the tenancy whose Gained Poll last returned: a commit
// for a split re-claimed behind the driver's back (its Gained unpolled)
// writes nothing and is Fenced; after the Poll it lands.
func TestCommitBindsToThePolledTenancy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		w := r.start("w1", finalPlan("a"))
		r.until("gained", 10*time.Second, []*member{w}, func() bool { return len(w.held) == 1 })
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 5}); err != nil {
			t.Fatal(err)
		}
		if err := w.c.Release("a"); err != nil {
			t.Fatal(err)
		}
		record := func() protocol.ProgressRecord {
			e, _, _ := r.st.Get(context.Background(), store.Durable, protocol.ProgressKey("a"))
			rec, err := protocol.DecodeProgress(e.Key, e.Value, protocol.Fingerprint("job:v1"))
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		// Re-claimed (epoch 2) while the driver does not poll.
		for i := 0; i < 80 && record().Epoch != 2; i++ {
			r.advance(125 * time.Millisecond)
		}
		if rec := record(); rec.Epoch != 2 || rec.Owner != "w1" {
			t.Fatalf("not re-claimed: %+v", rec)
		}
		err := w.c.Commit("a", coordination.SplitProgress{Watermark: 6})
		if coordination.KindOf(err) != coordination.Fenced || err.(*coordination.Error).Reason != "split a: not held here; nothing was written" {
			t.Fatalf("commit onto the unpolled tenancy: %v", err)
		}
		if errs := w.c.CommitFinal([]coordination.Commit{{Split: "a", Progress: coordination.SplitProgress{Watermark: 6}}}); coordination.KindOf(errs[0]) != coordination.Fenced {
			t.Fatalf("final commit onto the unpolled tenancy: %v", errs)
		}
		if err := w.c.Release("a"); err != nil {
			t.Fatal(err)
		}
		if rec := record(); *rec.Watermark != 5 || rec.Owner != "w1" {
			t.Fatalf("something was written: %+v", rec)
		}
		w.pump(t)
		if g := w.held["a"]; g.Epoch != 2 || g.Progress == nil || g.Progress.Watermark != 5 {
			t.Fatalf("gained %+v", g)
		}
		if err := w.c.Commit("a", coordination.SplitProgress{Watermark: 6}); err != nil {
			t.Fatalf("commit after the poll: %v", err)
		}
		if err := w.c.Depart(); err != nil {
			t.Fatal(err)
		}
	})
}

// The claim protocol at the level of one claim (docs/protocol.md, "Claim
// protocol"): a stale view loses the split record CAS and writes nothing; a
// live owner session found by the confirmation read is never robbed; a
// commit of the previous tenancy that lands before the fence is carried
// into the new tenancy; a completed progress record completes the split
// record instead of a Gained; a quarantine writes only the split record.
func TestClaimSplit(t *testing.T) {
	const maxAttempts = 4
	fp := protocol.Fingerprint("job:v1")
	dead := protocol.SplitRecord{ID: "a", FP: fp, Weight: 1, Epoch: 2, Owner: "dead", Nonce: "d1", Status: protocol.StatusRunnable}
	prevFence := protocol.FreshProgress("a", fp, "dead", 2, 0)
	tests := []struct {
		name      string
		view      protocol.SplitRecord
		moved     *protocol.SplitRecord    // a split record write after the view
		late      *protocol.ProgressRecord // a progress write after the view (a late commit)
		presence  string                   // the owner's live session nonce, "" for none
		wantOut   casOutcome
		wantDone  bool
		wantSplit func(protocol.SplitRecord) protocol.SplitRecord // from the view
		wantProg  *coordination.SplitProgress
	}{
		{name: "an expired claim fences and charges one attempt", view: dead, wantOut: casLanded,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0) }},
		{name: "a late commit of the previous tenancy is carried", view: dead,
			late: ptr(prevFence.Commit(coordination.SplitProgress{Watermark: 7}, 0)), wantOut: casLanded,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0) },
			wantProg:  &coordination.SplitProgress{Watermark: 7}},
		{name: "a completed progress record completes the split", view: dead,
			late: ptr(prevFence.Commit(coordination.SplitProgress{Watermark: 9, Completed: true}, 0)), wantOut: casLanded, wantDone: true,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.Claim("me", "n", 3, true, 0).Complete(0) },
			wantProg:  &coordination.SplitProgress{Watermark: 9, Completed: true}},
		{name: "a live owner session is never robbed", view: dead, presence: "d1", wantOut: casFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r }},
		{name: "a stale view writes nothing", view: dead, moved: ptr(dead.HandBack(0)), wantOut: casFenced,
			wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.HandBack(0) }},
		{name: "a quarantine on takeover writes only the split record", view: func() protocol.SplitRecord { r := dead; r.Attempts = maxAttempts - 1; return r }(),
			wantOut: casLanded, wantSplit: func(r protocol.SplitRecord) protocol.SplitRecord { return r.QuarantineOnTakeover(0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &faultyStore{Store: memstore.New(30 * time.Second)}
			v := casEnv(t, fs)
			v.cfg.MaxAttempts = maxAttempts
			key, pkey := protocol.SplitKey("a"), protocol.ProgressKey("a")
			put(t, fs, protocol.SpecKey("a"), protocol.EncodeSpec(protocol.NewSpec(coordination.SplitSpec{ID: "a", Weight: 1}, fp, 1)), 0)
			rev := put(t, fs, key, protocol.EncodeSplit(tt.view), 0)
			prev := put(t, fs, pkey, protocol.EncodeProgress(prevFence), 0)
			if tt.moved != nil {
				put(t, fs, key, protocol.EncodeSplit(*tt.moved), rev)
			}
			if tt.late != nil {
				put(t, fs, pkey, protocol.EncodeProgress(*tt.late), prev)
			}
			if tt.presence != "" {
				if _, _, err := fs.Create(context.Background(), store.Ephemeral, protocol.WorkerKey("dead"), protocol.EncodePresence(protocol.PresenceRecord{Nonce: tt.presence})); err != nil {
					t.Fatal(err)
				}
			}
			cand, ok := protocol.Classify(protocol.CandidateInput{Record: tt.view, Me: "me", MyNonce: "n", MaxAttempts: maxAttempts})
			if !ok {
				t.Fatal("not a candidate")
			}
			d := claimSplit(context.Background(), v, messages.ClaimSplit{Candidate: cand, Record: tt.view, RecordRev: rev}, 0)
			if d.outcome != tt.wantOut || d.done != tt.wantDone {
				t.Fatalf("outcome %v done %v, want %v done %v", d.outcome, d.done, tt.wantOut, tt.wantDone)
			}
			e, _, _ := fs.Get(context.Background(), store.Durable, key)
			got, err := protocol.DecodeSplit(e.Key, e.Value, fp)
			if err != nil {
				t.Fatal(err)
			}
			base := tt.view
			if tt.moved != nil {
				base = *tt.moved
			}
			if want := tt.wantSplit(base); !reflect.DeepEqual(got, want) {
				t.Fatalf("split record %+v\nwant         %+v", got, want)
			}
			pe, _, _ := fs.Get(context.Background(), store.Durable, pkey)
			prog, _ := protocol.DecodeProgress(pe.Key, pe.Value, fp)
			fenced := tt.wantOut == casLanded && !tt.wantDone && !cand.Quarantine
			if fenced != (prog.Epoch == 3 && prog.Owner == "me") {
				t.Fatalf("progress %+v: fenced %v, want %v", prog, !fenced, fenced)
			}
			if fenced && !reflect.DeepEqual(d.prog.Progress(), tt.wantProg) {
				t.Fatalf("carried %+v, want %+v", d.prog.Progress(), tt.wantProg)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
