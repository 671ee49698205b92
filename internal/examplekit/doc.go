// Package examplekit holds what the example programs built on it
// (examples/backfill) share: the shape of main (a context ended by
// SIGINT or SIGTERM, an exit status), a flag set that prints its usage on
// every mistake, the flags both take to run against a NATS server of the
// user's (-nats, -instance, -timeout, -log), the timing every example worker
// runs with, and spawning a worker's coordinator.
//
// Usage, in an example's main package:
//
//	func main() { examplekit.Main(run) }
//
//	func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
//		f := examplekit.NewFlags("backfill", usageText, stderr)
//		var common examplekit.Common
//		common.Register(f.FlagSet, "run one worker ...")
//		...
//	}
//
// It is internal: the examples are tutorials, and this package keeps only
// the plumbing out of their way, never the library calls they teach.
package examplekit
