package storetest

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"

	"github.com/spate-go/coordination/store"
)

// The linearizability check runs concurrent histories of Create, Update,
// Get and guarded Delete on a few durable keys from several goroutines,
// records when each call began and returned, and asks porcupine whether some
// order of the calls, each taking effect between its call and its return,
// explains every outcome under the sequential model of the contract.

// linKind is the operation of one call in a history.
type linKind int

const (
	linCreate linKind = iota
	linUpdate
	linGet
	linDelete
)

// linInput is a call's input as porcupine sees it.
type linInput struct {
	kind     linKind
	key      string
	value    string
	expected store.Revision // Update and Delete
}

// linOutput is a call's outcome. unknown is a write that failed with an
// error: it may or may not have taken effect.
type linOutput struct {
	ok      bool
	rev     store.Revision // a won Create or Update; a found Get
	value   string         // a found Get
	unknown bool
}

// linState is the sequential model of one key. rev is 0 while the key is
// live at a revision nobody learnt (a write of unknown outcome took effect);
// floor is the highest revision the key is known to have held.
type linState struct {
	live  bool
	value string
	rev   store.Revision
	floor store.Revision
}

// linStep applies in to s with outcome out, and reports whether the
// contract allows that outcome in state s.
func linStep(s linState, in linInput, out linOutput) (bool, linState) {
	if out.unknown {
		return linStepUnknown(s, in)
	}
	// matches reports whether the key is live at revision r (or may be).
	matches := func(r store.Revision) bool { return s.live && (s.rev == r || (s.rev == 0 && r > s.floor)) }
	switch in.kind {
	case linCreate:
		if !out.ok {
			return s.live, s
		}
		return !s.live && out.rev > s.floor, linState{live: true, value: in.value, rev: out.rev, floor: out.rev}
	case linUpdate:
		if !out.ok {
			return !s.live || s.rev != in.expected, s
		}
		return matches(in.expected) && out.rev > max(s.floor, in.expected), linState{live: true, value: in.value, rev: out.rev, floor: out.rev}
	case linGet:
		if !out.ok {
			return !s.live, s
		}
		if !s.live || out.value != s.value || (s.rev != 0 && out.rev != s.rev) || (s.rev == 0 && out.rev <= s.floor) {
			return false, s
		}
		return true, linState{live: true, value: s.value, rev: out.rev, floor: max(s.floor, out.rev)}
	default: // linDelete
		wins := !s.live || in.expected == 0 || matches(in.expected)
		if !out.ok {
			return s.live && in.expected != 0 && s.rev != in.expected, s
		}
		return wins, linState{floor: s.floor}
	}
}

// linStepUnknown applies a write whose outcome is unknown: it took effect
// if its precondition held where it is placed (a call that did not take
// effect can be placed at the history's end, where no one sees it).
func linStepUnknown(s linState, in linInput) (bool, linState) {
	switch in.kind {
	case linCreate:
		if !s.live {
			return true, linState{live: true, value: in.value, floor: s.floor}
		}
	case linUpdate:
		if s.live && (s.rev == in.expected || s.rev == 0) {
			return true, linState{live: true, value: in.value, floor: max(s.floor, in.expected)}
		}
	case linDelete:
		if !s.live || in.expected == 0 || s.rev == in.expected || s.rev == 0 {
			return true, linState{floor: s.floor}
		}
	}
	return true, s
}

// linModel is the porcupine model: one linState per key.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(linInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return linState{} },
	Step: func(state, input, output any) (bool, any) {
		return linStep(state.(linState), input.(linInput), output.(linOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		var call string
		switch in.kind {
		case linCreate:
			call = fmt.Sprintf("Create(%s, %q)", in.key, in.value)
		case linUpdate:
			call = fmt.Sprintf("Update(%s, %q, rev %d)", in.key, in.value, in.expected)
		case linGet:
			call = fmt.Sprintf("Get(%s)", in.key)
		default:
			call = fmt.Sprintf("Delete(%s, rev %d)", in.key, in.expected)
		}
		switch {
		case out.unknown:
			return call + " -> error (outcome unknown)"
		case in.kind == linGet && out.ok:
			return fmt.Sprintf("%s -> %q at rev %d", call, out.value, out.rev)
		case out.ok && in.kind != linDelete:
			return fmt.Sprintf("%s -> won, rev %d", call, out.rev)
		case out.ok:
			return call + " -> won"
		}
		if in.kind == linGet {
			return call + " -> absent"
		}
		return call + " -> lost"
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		if !s.live {
			return fmt.Sprintf("absent (revisions so far up to %d)", s.floor)
		}
		if s.rev == 0 {
			return fmt.Sprintf("%q at an unknown revision above %d", s.value, s.floor)
		}
		return fmt.Sprintf("%q at rev %d", s.value, s.rev)
	},
}

// linPlanOp is one drawn call: which operation on which key, and which
// expected revision to use from what the goroutines have learnt so far.
type linPlanOp struct {
	kind linKind
	key  int
	pick int // 0 the newest known revision, 1 an older one, 2 zero, 3 one never returned
}

// linPlan is one drawn history: the keys and each goroutine's calls.
type linPlan struct {
	keys    int
	clients [][]linPlanOp
}

// linPlans draws histories: 2 to 4 goroutines of 5 to 25 calls each on 1
// to 3 keys.
var linPlans = rapid.Custom(func(t *rapid.T) linPlan {
	p := linPlan{keys: rapid.IntRange(1, 3).Draw(t, "keys")}
	n := rapid.IntRange(2, 4).Draw(t, "goroutines")
	for range n {
		p.clients = append(p.clients, rapid.SliceOfN(rapid.Custom(func(t *rapid.T) linPlanOp {
			return linPlanOp{
				kind: linKind(rapid.IntRange(0, 3).Draw(t, "op")),
				key:  rapid.IntRange(0, p.keys-1).Draw(t, "key"),
				pick: rapid.IntRange(0, 3).Draw(t, "expected"),
			}
		}), 5, 25).Draw(t, "calls"))
	}
	return p
})

// linKnown is what the goroutines of a history have learnt: every revision
// returned per key, in the order they were learnt.
type linKnown struct {
	mu   sync.Mutex
	revs map[string][]store.Revision
}

func (k *linKnown) learn(key string, rev store.Revision) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.revs[key] = append(k.revs[key], rev)
}

// expected resolves a drawn pick to a revision.
func (k *linKnown) expected(key string, pick, salt int) store.Revision {
	k.mu.Lock()
	defer k.mu.Unlock()
	revs := k.revs[key]
	switch {
	case pick == 2:
		return 0
	case pick == 3 || len(revs) == 0:
		var top store.Revision
		for _, r := range revs {
			top = max(top, r)
		}
		return top + 1 + store.Revision(salt%3)
	case pick == 1 && len(revs) > 1:
		return revs[salt%(len(revs)-1)]
	}
	return revs[len(revs)-1]
}

// runHistory runs plan against st on keys under prefix and returns the
// history. With disrupt, it calls disrupt once a third of the planned calls
// have begun, and each goroutine repeats its plan until a pass that began
// after disrupt returned, pausing linPassPause between passes while disrupt
// runs; a goroutine whose write failed probes the key with
// Gets until the store answers again, so that few calls of unknown outcome
// pile up.
func runHistory(st store.Store, plan linPlan, prefix string, disrupt func() error) ([]porcupine.Operation, error) {
	base := time.Now()
	known := &linKnown{revs: map[string][]store.Revision{}}
	total := 0
	for _, c := range plan.clients {
		total += len(c)
	}
	var (
		begun       atomic.Int64
		disrupted   = make(chan struct{}) // closed once disrupt returned, or at once without one
		disruptErr  error                 // written before disrupted is closed
		trigger     = make(chan struct{}) // closed when disrupt is due
		triggerOnce sync.Once
		wg          sync.WaitGroup
		mu          sync.Mutex
		history     []porcupine.Operation // guarded by mu
		unknownAt   []int                 // indexes in history of calls of unknown outcome; guarded by mu
	)
	if disrupt == nil {
		close(disrupted)
	} else {
		wg.Go(func() {
			<-trigger
			disruptErr = disrupt()
			close(disrupted)
		})
	}
	h := &linHistory{
		now: func() int64 { return int64(time.Since(base)) },
		record: func(op porcupine.Operation) {
			mu.Lock()
			defer mu.Unlock()
			if op.Output.(linOutput).unknown {
				unknownAt = append(unknownAt, len(history))
			}
			history = append(history, op)
		},
	}
	start := make(chan struct{})
	for id, calls := range plan.clients {
		wg.Go(func() {
			<-start
			c := linClient{st: st, id: id, prefix: prefix, known: known, h: h}
			for pass := 0; ; pass++ {
				last := isClosed(disrupted)
				for i, p := range calls {
					if disrupt != nil && begun.Add(1) >= int64(total/3) {
						triggerOnce.Do(func() { close(trigger) })
					}
					c.call(p, fmt.Sprintf("g%d.%d.%d", id, pass, i), pass*len(calls)+i)
				}
				if last || c.dead {
					return
				}
				// Pace the passes while disrupt runs, so that the history
				// stays small enough to check.
				select {
				case <-disrupted:
				case <-time.After(linPassPause):
				}
			}
		})
	}
	close(start)
	wg.Wait()
	end := h.now() + 1
	for _, i := range unknownAt {
		history[i].Return = end // it may take effect any time after its call
	}
	return history, disruptErr
}

// linPassPause is how long a goroutine waits between passes of its plan
// while disrupt runs.
const linPassPause = 200 * time.Millisecond

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// linHistory is the clock and the log a history's goroutines share.
type linHistory struct {
	now    func() int64 // nanoseconds since the history began
	record func(porcupine.Operation)
}

// linClient is one goroutine of a history.
type linClient struct {
	st     store.Store
	id     int
	prefix string
	known  *linKnown
	h      *linHistory
	dead   bool // the check's deadline passed
}

// call makes one planned call and records it; a failed write is recorded as
// of unknown outcome, then the key is probed until the store answers. A
// failed Get has no effect and is left out.
func (c *linClient) call(p linPlanOp, value string, salt int) {
	if c.dead {
		return
	}
	key := fmt.Sprintf("%skey%d", c.prefix, p.key)
	in := linInput{kind: p.kind, key: key, value: value}
	if p.kind == linUpdate || p.kind == linDelete {
		in.expected = c.known.expected(key, p.pick, salt)
	}
	out, called, returned, err := c.do(in)
	switch {
	case err == nil:
		c.h.record(porcupine.Operation{ClientId: c.id, Input: in, Call: called, Output: out, Return: returned})
	case p.kind != linGet:
		c.h.record(porcupine.Operation{ClientId: c.id, Input: in, Call: called, Output: linOutput{unknown: true}})
		c.probe(key)
	}
}

// do runs one call and learns the revision it returned.
func (c *linClient) do(in linInput) (out linOutput, called, returned int64, err error) {
	ctx, cancel := opCtx(c.st)
	defer cancel()
	called = c.h.now()
	switch in.kind {
	case linCreate:
		out.rev, out.ok, err = c.st.Create(ctx, store.Durable, in.key, []byte(in.value))
	case linUpdate:
		out.rev, out.ok, err = c.st.Update(ctx, store.Durable, in.key, []byte(in.value), in.expected)
	case linGet:
		var e store.Entry
		e, out.ok, err = c.st.Get(ctx, store.Durable, in.key)
		out.rev, out.value = e.Revision, string(e.Value)
	case linDelete:
		out.ok, err = c.st.Delete(ctx, store.Durable, in.key, in.expected)
	}
	returned = c.h.now()
	if err != nil && !time.Now().Before(budgetOf(c.st).end()) {
		c.dead = true
	}
	if err == nil && out.ok && out.rev != 0 {
		c.known.learn(in.key, out.rev)
	}
	return out, called, returned, err
}

// probe reads key every 20ms until the store answers (that read is
// recorded) or the check's deadline passes.
func (c *linClient) probe(key string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	in := linInput{kind: linGet, key: key}
	for !c.dead {
		if out, called, returned, err := c.do(in); err == nil {
			c.h.record(porcupine.Operation{ClientId: c.id, Input: in, Call: called, Output: out, Return: returned})
			return
		}
		<-tick.C
	}
}

// linVerdict checks history with porcupine. On a violation it writes
// porcupine's visualisation into t's artifact directory and returns a
// failure message naming it; "" means linearizable.
func linVerdict(t *testing.T, history []porcupine.Operation, name string) string {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(linModel, history, 20*time.Second)
	switch res {
	case porcupine.Ok:
		return ""
	case porcupine.Unknown:
		t.Logf("%s: porcupine gave up after 20s on %d operations; counted as passed", name, len(history))
		return ""
	}
	for _, part := range linModel.Partition(history) {
		if !porcupine.CheckOperations(linModel, part) {
			t.Logf("%s: the calls on %s, by call time:\n%s", name, part[0].Input.(linInput).key, describeCalls(part))
			break
		}
	}
	path := filepath.Join(t.ArtifactDir(), name+".html")
	if err := porcupine.VisualizePath(linModel, info, path); err != nil {
		return fmt.Sprintf("%s (%d operations) is not linearizable, and its visualisation could not be written: %v", name, len(history), err)
	}
	return fmt.Sprintf("%s (%d operations) is not linearizable under the store contract; porcupine's visualisation: %s (kept with go test -artifacts)", name, len(history), path)
}

// linTimeBox bounds the real time testLinearizable spends running new
// histories; the rapid checks drawn after it pass without running, so a slow
// backend (a replicated cluster) checks fewer histories instead of taking
// longer.
const linTimeBox = 4 * time.Second

// testLinearizable checks rapid-drawn concurrent histories with porcupine.
func testLinearizable(t *testing.T, newStore newStoreFunc) {
	st, _ := fresh(t, newStore)
	began := time.Now()
	checkHistories(t, st, nil, func(prop func(p linPlan, n int) string) {
		n := 0
		rapid.Check(t, func(rt *rapid.T) {
			p := linPlans.Draw(rt, "history")
			if time.Since(began) > linTimeBox {
				return
			}
			n++
			if msg := prop(p, n); msg != "" {
				rt.Fatal(msg)
			}
		})
	})
}

// CheckLinearizable runs n concurrent histories of Create, Update, Get and
// guarded Delete on a few durable keys of st, from several goroutines, and
// checks each with porcupine against the sequential model of the store
// contract. The histories are drawn by pgregory.net/rapid from fixed seeds
// (Run draws and shrinks its own). If disrupt is not nil, each history calls
// it once, from its own goroutine, after a third of its calls have begun
// (to restart a server, for example), and goes on until it returned; a
// write failing meanwhile counts as of unknown outcome. disrupt must not
// call t's Fatal methods; an error it returns fails the test.
//
// On a violation, porcupine's HTML visualisation is written into t's
// artifact directory (see testing.T.ArtifactDir) and named in the failure.
// Each history uses keys of its own; st is not closed. CheckLinearizable
// blocks until every history ran; the run is bounded by 90s plus a minute
// per history.
func CheckLinearizable(t *testing.T, st store.Store, n int, disrupt func() error) {
	t.Helper()
	b := &budget{check: t.Name(), span: func(time.Duration) time.Duration { return time.Duration(n) * time.Minute }}
	b.start(st.LeaseTTL())
	defer b.stop()
	checkHistories(t, &checked{Store: st, b: b}, disrupt, func(prop func(p linPlan, n int) string) {
		for i := range n {
			if msg := prop(linPlans.Example(i), i+1); msg != "" {
				t.Fatal(msg)
			}
		}
	})
}

// checkHistories runs the histories each yields through prop, which returns
// a failure message or "", and logs how many histories and operations were
// checked and how long it took.
func checkHistories(t *testing.T, st store.Store, disrupt func() error, each func(prop func(p linPlan, n int) string)) {
	t.Helper()
	began := time.Now()
	histories, ops, maxOps, unknown := 0, 0, 0, 0
	var checking time.Duration
	defer func() {
		if histories > 0 {
			t.Logf("%d histories checked: %.1f operations per history on average, %d at most, %d of unknown outcome in all; %v in all, %v of it in porcupine",
				histories, float64(ops)/float64(histories), maxOps, unknown, time.Since(began).Round(time.Millisecond), checking.Round(time.Millisecond))
		}
	}()
	each(func(p linPlan, n int) string {
		history, err := runHistory(st, p, fmt.Sprintf("lin%d.", n), disrupt)
		if err != nil {
			return fmt.Sprintf("history %d: disrupt: %v", n, err)
		}
		histories++
		ops += len(history)
		for _, op := range history {
			if op.Output.(linOutput).unknown {
				unknown++
			}
		}
		maxOps = max(maxOps, len(history))
		c := time.Now()
		defer func() { checking += time.Since(c) }()
		return linVerdict(t, history, fmt.Sprintf("history-%d", n))
	})
}

// describeCalls renders calls one a line, by call time, for a failure
// message.
func describeCalls(calls []porcupine.Operation) string {
	sorted := slices.Clone(calls)
	slices.SortFunc(sorted, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for _, op := range sorted {
		fmt.Fprintf(&b, "  g%d [%9.3fms, %9.3fms] %s\n", op.ClientId, float64(op.Call)/1e6, float64(op.Return)/1e6, linModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
