package leader

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors/internal/worker"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// seedConcurrency bounds the splits seeded at once: enough to keep the
// store's round trips overlapped, few enough not to flood it.
const seedConcurrency = 64

// seedReport is how many seeded splits make the first progress report to
// the leader, which evaluates the assignment once per report while
// seeding; later reports come at each doubling (4096, 8192, ...), so
// seeding n splits costs O(log n) evaluations and assignment rewrites.
const seedReport = 2048

// seed writes the records of every planned split the leader does not
// already see (docs/protocol.md, "Seeding"): spec, then the seeded progress
// record if any, then the split record, each create-if-absent (first writer
// wins). Splits are seeded concurrently, seedConcurrency at a time; each
// split's writes stay in order; report is called when the count of created
// split records reaches seedReport and each doubling after it. It returns how many split records it created and the first
// error, after which no new split is started.
func seed(ctx context.Context, v *worker.Env, splits []coordination.PlannedSplit, known map[coordination.SplitID]bool, fp, gen uint64, report func()) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		created atomic.Int64
		once    sync.Once
		first   error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	work := make(chan coordination.PlannedSplit)
	for range min(seedConcurrency, len(splits)) {
		wg.Go(func() {
			for ps := range work {
				ok, err := seedOne(ctx, v, ps, fp, gen)
				if err != nil {
					fail(err)
					continue
				}
				if !ok {
					continue
				}
				if n := created.Add(1); n >= seedReport && n&(n-1) == 0 {
					report()
				}
			}
		})
	}
feed:
	for _, ps := range splits {
		if known[ps.Spec.ID] {
			continue
		}
		select {
		case work <- ps:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return int(created.Load()), first
}

// seedOne writes one split's records; ok reports that it created the split
// record.
func seedOne(ctx context.Context, v *worker.Env, ps coordination.PlannedSplit, fp, gen uint64) (bool, error) {
	id := ps.Spec.ID
	oc, cancel := v.OpCtx(ctx)
	defer cancel()
	_, fresh, err := v.Store.Create(oc, store.Durable, protocol.SpecKey(id), protocol.EncodeSpec(protocol.NewSpec(ps.Spec, fp, gen)))
	if err != nil {
		return false, err
	}
	if !fresh {
		if err := checkNotDeleted(oc, v, id, fp); err != nil {
			return false, err
		}
	}
	now := v.NowMs()
	if ps.Seed != nil {
		if _, _, err := v.Store.Create(oc, store.Durable, protocol.ProgressKey(id), protocol.EncodeProgress(protocol.SeedProgress(id, fp, *ps.Seed, now))); err != nil {
			return false, err
		}
	}
	_, ok, err := v.Store.Create(oc, store.Durable, protocol.SplitKey(id), protocol.EncodeSplit(protocol.SeedSplit(id, fp, ps.Spec.Weight, ps.Seed, now)))
	return ok, err
}

// checkNotDeleted runs before seeding a split whose spec already existed
// but whose split record is not in the leader's view: an earlier seeding
// that stopped between the two writes left the spec, or the split record
// was deleted outside the library (docs/protocol.md, "Missing records"). A
// progress record above epoch 0 proves the split was owned, so its record
// existed and was deleted: seeding it again at epoch 0 would restart its
// epochs below its progress record's, and every claim would lose its fence.
// That is Fatal; a split never owned is seeded again as it was.
func checkNotDeleted(ctx context.Context, v *worker.Env, id coordination.SplitID, fp uint64) error {
	if _, found, err := v.Store.Get(ctx, store.Durable, protocol.SplitKey(id)); err != nil || found {
		return err
	}
	key := protocol.ProgressKey(id)
	e, found, err := v.Store.Get(ctx, store.Durable, key)
	if err != nil || !found {
		return err
	}
	p, err := protocol.DecodeProgress(key, e.Value, fp)
	if err != nil {
		return err
	}
	if p.Epoch > 0 {
		return worker.SplitRecordDeleted(protocol.SplitKey(id))
	}
	return nil
}
