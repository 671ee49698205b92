package examplekit

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses every example uses.
const (
	ExitOK          = 0 // the job completed and checked out
	ExitFailed      = 1 // loss, a failure, an unreachable server, a timeout
	ExitBadFlags    = 2 // a flag mistake (the usage was printed)
	ExitInterrupted = 3 // SIGINT or SIGTERM stopped the run cleanly; a rerun resumes
)

// Program is an example's whole program behind main: it parses args, runs,
// writes to stdout and stderr and returns the exit status. ctx ends on
// SIGINT or SIGTERM.
type Program func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Main runs p with the process's arguments and standard streams, a context
// ended by SIGINT or SIGTERM, and exits with its status.
func Main(p Program) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := p(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
