package lanes_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
	"github.com/spate-go/coordination/store/memstore"
)

// A worker on the kit: the plan divides rows [0, 10000) into 8 splits, and
// the read function claims each row before it processes it. Drains,
// pauses, runtime cuts and completion come with the kit.
func Example() {
	var mu sync.Mutex
	seen := map[int64]int{}
	process := func(row int64) {
		mu.Lock()
		defer mu.Unlock()
		seen[row]++
	}

	src := lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[int64]) error {
		for row := lane.Next(); lane.Claim(row); row++ {
			process(row)
		}
		return nil
	}, lanes.Options{})
	plan, err := lanes.Planner(lanes.Offsets("rows", 0, 10_000, 8))
	if err != nil {
		panic(err)
	}

	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-1"
	cfg.Logger = slog.New(slog.DiscardHandler)
	st := memstore.New(cfg.LeaseDuration)
	defer st.Close()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		panic(err)
	}
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("run:", driver.Run(context.Background(), c, src, driver.WithPlanner(plan)))
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	fmt.Printf("%d rows, %d duplicates\n", len(seen), dups)
	// Output:
	// run: <nil>
	// 10000 rows, 0 duplicates
}
