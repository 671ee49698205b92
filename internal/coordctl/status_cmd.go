package coordctl

import (
	"context"
	"flag"
)

var statusCommand = command{
	name:  "status",
	about: "Shows the job: fingerprint, plan finality and generation, leader, live workers (splits held,\nweight, assigned, lane budget), splits by status with total and remaining weight, and the\nquarantined splits with their attempts.",
	flags: func(fs *flag.FlagSet) func(context.Context, *env) int {
		asJSON := fs.Bool("json", false, "print JSON instead of tables")
		rows := fs.Bool("splits", false, "add one row per split: status, owner, epoch, attempts, watermark, weight")
		return func(ctx context.Context, e *env) int {
			if len(e.args) > 0 {
				return e.failf("status takes no arguments, got %q", e.args[0])
			}
			st, ctx, release, err := e.openBounded(ctx)
			if err != nil {
				return e.failf("%v", err)
			}
			defer release()
			j, err := readJob(ctx, st, *rows)
			if err != nil {
				return e.failf("reading %s: %v", e.conn.where(), err)
			}
			s := statusOf(e.conn.job, j, *rows)
			if *asJSON {
				err = writeJSON(e.stdout, s)
			} else {
				err = s.writeTable(e.stdout)
			}
			if err != nil {
				return e.failf("writing the status: %v", err)
			}
			return ExitOK
		}
	},
}
