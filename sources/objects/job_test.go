package objects_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/sources/objects"
	"github.com/spate-go/coordination/store/memstore"
	"github.com/spate-go/coordination/testkit"
)

// delivery is one record as a job's Func got it.
type delivery struct {
	key string
	off int64
}

// ledger counts a job's deliveries and keeps each record's text.
type ledger struct {
	mu    sync.Mutex
	count map[delivery]int
	text  map[delivery]string
	n     int
}

func newLedger() *ledger {
	return &ledger{count: map[delivery]int{}, text: map[delivery]string{}}
}

// deliver is the jobs' Func: it records the record and, every 100
// records, lets 10 ms of (bubble) time pass, so that workers join,
// leave and cut while lanes read.
func (l *ledger) deliver(_ context.Context, r objects.Record) error {
	l.mu.Lock()
	d := delivery{r.Key, r.Offset}
	l.count[d]++
	if l.count[d] == 1 {
		l.text[d] = string(r.Line)
	} else if l.text[d] != string(r.Line) {
		l.mu.Unlock()
		return fmt.Errorf("record %s@%d delivered as %q and as %q", r.Key, r.Offset, l.text[d], r.Line)
	}
	l.n++
	pause := l.n%100 == 0
	l.mu.Unlock()
	if pause {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// check compares the deliveries with the records of want (key -> bytes,
// decompressed): every record delivered, with its text; exactly once
// unless atLeastOnce. It returns "" or what differs.
func (l *ledger) check(want map[string][]byte, atLeastOnce bool) (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	expected := map[delivery]string{}
	for key, content := range want {
		for p := 0; p < len(content); {
			j := bytes.IndexByte(content[p:], '\n')
			if j < 0 {
				j = len(content) - p
			}
			expected[delivery{key, int64(p)}] = string(content[p : p+j])
			p += j + 1
		}
	}
	var problems []string
	dups := 0
	for d, text := range expected {
		switch n := l.count[d]; {
		case n == 0:
			problems = append(problems, fmt.Sprintf("%s@%d (%q) never delivered", d.key, d.off, text))
		case n > 1 && !atLeastOnce:
			problems = append(problems, fmt.Sprintf("%s@%d delivered %d times", d.key, d.off, n))
		case l.text[d] != text:
			problems = append(problems, fmt.Sprintf("%s@%d delivered as %q, want %q", d.key, d.off, l.text[d], text))
		}
		dups += max(l.count[d]-1, 0)
	}
	for d := range l.count {
		if _, ok := expected[d]; !ok {
			problems = append(problems, fmt.Sprintf("%s@%d (%q) is not a record of the bucket", d.key, d.off, l.text[d]))
		}
	}
	sort.Strings(problems)
	if len(problems) > 8 {
		problems = append(problems[:8], fmt.Sprintf("... and %d more", len(problems)-8))
	}
	return strings.Join(problems, "\n"), dups
}

// fleet is a job's workers: real coordinators over one memstore, each
// running driver.Run with a source of the package.
type fleet struct {
	t       *testing.T
	e       *actor.Engine
	st      *memstore.Store
	planner *objects.Planner
	bucket  *blob.Bucket
	led     *ledger
	fn      objects.Func // led.deliver unless set
	opts    objects.Options
	mutate  func(*coordination.Config)

	mu       sync.Mutex
	wg       sync.WaitGroup
	outcomes map[string]error
	coords   map[string]*actors.Coordinator
	aborted  map[string]bool
	poisons  []string
}

// newFleet makes a fleet; call it inside a synctest bubble.
func newFleet(t *testing.T, b *blob.Bucket, p *objects.Planner, led *ledger, opts objects.Options, mutate func(*coordination.Config)) *fleet {
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(testkit.HarnessConfig().LeaseDuration)
	t.Cleanup(func() { _ = st.Close() })
	return &fleet{t: t, e: e, st: st, planner: p, bucket: b, led: led, opts: opts, mutate: mutate,
		outcomes: map[string]error{}, coords: map[string]*actors.Coordinator{}, aborted: map[string]bool{}}
}

// poisonRecorder is a source that keeps the reasons of its poison reports.
type poisonRecorder struct {
	*lanes.Source[int64]
	f *fleet
}

// cutsMade and drainsBegun count, over a test run, the runtime cuts and the
// drains the sources of fleets accepted, so a property can tell its moves
// and cuts are not vacuous.
var cutsMade, drainsBegun atomic.Int64

func (p poisonRecorder) TrySplit(id driver.LaneID, keep float64) (driver.Cut, bool, error) {
	c, ok, err := p.Source.TrySplit(id, keep)
	if ok {
		cutsMade.Add(1)
	}
	return c, ok, err
}

func (p poisonRecorder) BeginRevoke(split coordination.SplitID) bool {
	ok := p.Source.BeginRevoke(split)
	if ok {
		drainsBegun.Add(1)
	}
	return ok
}

func (p poisonRecorder) TakePoisoned() []driver.Poisoned {
	ps := p.Source.TakePoisoned()
	p.f.mu.Lock()
	for _, x := range ps {
		p.f.poisons = append(p.f.poisons, x.Reason)
	}
	p.f.mu.Unlock()
	return ps
}

// start starts worker id.
func (f *fleet) start(id string) {
	cfg := testkit.HarnessConfig()
	cfg.InstanceID = id
	cfg.StartupGrace = 0
	cfg.CutInterval = 100 * time.Millisecond // cut for idle lanes well within a job
	cfg.Logger = slog.New(slog.DiscardHandler)
	if f.mutate != nil {
		f.mutate(&cfg)
	}
	c, err := actors.Spawn(f.e, f.st, cfg)
	if err != nil {
		f.t.Fatalf("spawn %s: %v", id, err)
	}
	f.mu.Lock()
	f.coords[id] = c
	f.mu.Unlock()
	opts := f.opts
	opts.Lanes.Logger = cfg.Logger
	fn := f.fn
	if fn == nil {
		fn = f.led.deliver
	}
	src := poisonRecorder{objects.NewSource(f.bucket, fn, opts), f}
	f.wg.Go(func() {
		err := driver.Run(context.Background(), c, src, driver.WithPlanner(f.planner), driver.WithLogger(cfg.Logger), driver.WithCommitInterval(100*time.Millisecond))
		f.mu.Lock()
		f.outcomes[id] = err
		f.mu.Unlock()
	})
}

// crash aborts worker id, as a crash.
func (f *fleet) crash(id string) {
	f.mu.Lock()
	c := f.coords[id]
	f.aborted[id] = true
	f.mu.Unlock()
	c.Abort()
}

// wait waits for every worker and returns the outcomes of those not
// crashed that were not nil.
func (f *fleet) wait() []string {
	f.wg.Wait()
	var bad []string
	for id, err := range f.outcomes {
		if err != nil && !f.aborted[id] {
			bad = append(bad, fmt.Sprintf("%s: %v", id, err))
		}
	}
	sort.Strings(bad)
	return bad
}

// genFile returns a file of lines drawn from seed: lengths up to maxLine
// (a quarter of them empty), the last line with or without its newline,
// about size bytes.
func genFile(seed uint64, size, maxLine int) []byte {
	r := rand.New(rand.NewPCG(seed, 39))
	var b []byte
	for len(b) < size {
		n := r.IntN(maxLine + 1)
		if r.IntN(4) == 0 {
			n = 0
		}
		start := len(b)
		b = append(b, fmt.Sprintf("%d:", start)...)
		for range n {
			b = append(b, byte('a'+r.IntN(26)))
		}
		b = append(b, '\n')
	}
	if len(b) > 0 && r.IntN(2) == 0 {
		b = b[:len(b)-1] // the last line without a newline
	}
	return b
}

// gz returns b compressed.
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// openBucket opens a memblob bucket, or a fileblob bucket in a new
// directory removed by cleanup.
func openBucket(t testing.TB, file bool) (*blob.Bucket, func()) {
	if !file {
		b := memblob.OpenBucket(nil)
		return b, func() { _ = b.Close() }
	}
	dir, err := os.MkdirTemp("", "objects-test-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, func() { _ = b.Close(); _ = os.RemoveAll(dir) }
}
