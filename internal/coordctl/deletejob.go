package coordctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

var deleteJobCommand = command{
	name:  "delete-job",
	about: "Removes the job's two buckets (NATS) or its schema (PostgreSQL) and with them every record of the job (plan, splits,\nprogress, assignments, sessions). It refuses without -yes, and while workers are live\n(presence keys exist) unless -force: live workers would fail on the missing buckets.\nA job with one bucket left (deleted by hand, or a delete cut short) is finished off.",
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		yes := fs.Bool("yes", false, "confirm: the job's records are removed for good")
		force := fs.Bool("force", false, "remove the job even while workers are live")
		return func(ctx context.Context, e *env) int {
			if len(e.args) > 0 {
				return e.failf("delete-job takes no arguments, got %q", e.args[0])
			}
			st, ctx, release, err := e.openBounded(ctx)
			if err != nil {
				return e.failf("%v", err)
			}
			defer release()
			live, err := liveWorkers(ctx, st)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				// A job half deleted by hand, its lease bucket gone:
				// no worker can be live, so the rest goes.
				live, err = nil, nil
			}
			if err != nil {
				return e.failf("reading %s: %v", e.conn.where(), err)
			}
			if len(live) > 0 && !*force {
				return e.failf("refusing to delete job %q: live workers: %s; stop them first, or pass -force", e.conn.job, strings.Join(live, ", "))
			}
			if !*yes {
				return e.failf("delete-job removes every record of job %q for good; pass -yes to confirm", e.conn.job)
			}
			if err := st.DeleteJob(ctx); err != nil {
				return e.failf("deleting %s: %v", e.conn.where(), err)
			}
			note := ""
			if len(live) > 0 {
				note = fmt.Sprintf(" (with %d live workers: they will fail)", len(live))
			}
			fmt.Fprintf(e.stdout, "deleted job %q: %s removed%s\n", e.conn.job, e.conn.storeKind(), note)
			return ExitOK
		}
	},
}

// liveWorkers lists the instances whose presence key exists, sorted.
func liveWorkers(ctx context.Context, st store.Store) ([]string, error) {
	entries, err := st.List(ctx, store.Ephemeral, protocol.PrefixWorker)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, e := range entries {
		if kind, name := protocol.ParseKey(store.Ephemeral, e.Key); kind == protocol.KeyPresence {
			live[name] = true
		}
	}
	return slices.Sorted(maps.Keys(live)), nil
}
