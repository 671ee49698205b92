package lanes_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/testkit"
)

// paced is how long a checked lane takes per record, so that the check can
// cut it while it reads.
const paced = 20 * time.Microsecond

// tally records what one source instance delivered.
type tally struct {
	mu   sync.Mutex
	keys []string
}

func (t *tally) add(k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = append(t.keys, k)
}

func (t *tally) snapshot() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.keys...)
}

func TestOffsetSourcePassesTheSplitterCheck(t *testing.T) {
	spec, err := lanes.Split[int64]{ID: "rows", Range: lanes.Range[int64]{Start: 0, End: 9_000}, Weight: 9_000}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckSplitter(t, testkit.SplittableSource{
		Split: spec,
		New: func(testing.TB) (driver.SourceReader, func() []string) {
			got := &tally{}
			src := lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[int64]) error {
				for row := (lane.Next() + 2) / 3 * 3; lane.Claim(row); row += 3 { // sparse: every third offset
					got.add(fmt.Sprint(row))
					time.Sleep(paced)
				}
				return nil
			}, lanes.Options{})
			return src, got.snapshot
		},
	})
}

func TestKeySourcePassesTheSplitterCheck(t *testing.T) {
	key := func(i uint32) []byte { return binary.BigEndian.AppendUint32([]byte("user/"), i) }
	spec, err := lanes.Split[[]byte]{ID: "users", Range: lanes.Range[[]byte]{Start: []byte("user/"), End: []byte("user0")}, Weight: 3_000}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	const batch = 16
	testkit.CheckSplitter(t, testkit.SplittableSource{
		Split: spec,
		New: func(testing.TB) (driver.SourceReader, func() []string) {
			got := &tally{}
			// 10,000 keys spread over the range, read in batches: the
			// batch's last key is claimed, then the batch is processed.
			src := lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[[]byte]) error {
				next, end := lane.Next(), lane.End()
				for i := uint32(0); i < 3_000; {
					var rows [][]byte
					for ; i < 3_000 && len(rows) < batch; i++ {
						k := key(i * 1_000_000)
						if string(k) >= string(next) && (len(end) == 0 || string(k) < string(end)) {
							rows = append(rows, k)
						}
					}
					if len(rows) == 0 {
						continue
					}
					if !lane.Claim(rows[len(rows)-1]) {
						return nil
					}
					for _, k := range rows {
						got.add(fmt.Sprintf("%x", k))
						time.Sleep(paced)
					}
				}
				return nil
			}, lanes.Options{})
			return src, got.snapshot
		},
	})
}
