package coordctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Exit statuses of [Run].
const (
	// ExitOK: the command did what it was asked; for audit, no violation.
	ExitOK = 0
	// ExitError: the command failed (store unreachable, refused, bad record).
	ExitError = 1
	// ExitUsage: bad subcommand, flags or arguments.
	ExitUsage = 2
	// ExitViolations: audit found at least one violation.
	ExitViolations = 3
)

// usageText is the top-level help.
const usageText = `usage: coordctl [connection flags] <command> [flags] [args]

Inspect and operate a job coordinated through NATS JetStream KV or
PostgreSQL. Every command takes the store as a URL and the job's name:
-store nats://HOST:4222 (or -nats URL) or -store postgres://USER@HOST/DB,
then -job NAME; on NATS also -user with -password-file, -token-file,
-creds, -tls-ca, -tls-cert and -tls-key; on PostgreSQL -password-file
(TLS via sslmode in the URL); -timeout on both. The job's lease is read
from the job. coordctl never creates a job's buckets or schema.

commands:
  status      the job: plan, leader, live workers, splits by status and weight
              (-json, -splits for one row per split)
  watch       status refreshed live until interrupted (-interval)
  requeue     make quarantined splits runnable with fresh attempts
              (SPLIT... or -all-quarantined); safe while workers run
  delete-job  remove the job's buckets (NATS) or schema (PostgreSQL)
              (-yes; refuses while workers are live unless -force)
  audit       check the fencing invariants on the job's write history;
              exits 3 on a violation (-follow watches writes live, -json)

The connection flags go before or after the command, and every flag may
follow the arguments. Run "coordctl <command> -h" for a command's flags.
Exit status: 0 ok, 1 failed, 2 bad usage, 3 audit violations.
`

// command is one subcommand: it registers its flags on fs and runs with
// the parsed connection flags and positional arguments.
type command struct {
	name  string
	args  string // positional arguments, for the usage line
	about string
	flags func(fs *flag.FlagSet) func(ctx context.Context, e *env) int
}

// env is what a running subcommand gets.
type env struct {
	conn   *connFlags
	args   []string
	stdout io.Writer
	stderr io.Writer
}

// failf prints an error for the subcommand and returns ExitError.
func (e *env) failf(format string, a ...any) int {
	fmt.Fprintf(e.stderr, "coordctl: "+format+"\n", a...)
	return ExitError
}

// openBounded bounds ctx by -timeout and opens the job's store within it;
// release cancels the bound and closes the store.
func (e *env) openBounded(ctx context.Context) (jobStore, context.Context, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, e.conn.timeout)
	st, err := e.conn.open(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return st, ctx, func() { cancel(); _ = st.Close() }, nil
}

var commands = []command{statusCommand, watchCommand, requeueCommand, deleteJobCommand, auditCommand}

// Run is the whole coordctl command: it parses args (the subcommand and
// its flags), runs it against the job and returns the exit status. The
// connection flags may come before the command as well as after it, and
// every flag may follow positional arguments ("--" ends the flags). ctx
// ends watch and audit -follow (an interrupt); the other commands are
// bounded by -timeout. Output goes to stdout, errors and notes to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	leading, rest, err := splitLeading(args)
	switch {
	case errors.Is(err, flag.ErrHelp) || len(rest) > 0 && rest[0] == "help":
		fmt.Fprint(stderr, usageText)
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "coordctl: %v; before the command only the connection flags are accepted, put the others after it\n\n%s", err, usageText)
		return ExitUsage
	case len(rest) == 0:
		fmt.Fprint(stderr, usageText)
		return ExitUsage
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == rest[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "coordctl: unknown command %q; the commands are %s\n\n%s", rest[0], commandNames(), usageText)
		return ExitUsage
	}
	fs := flag.NewFlagSet("coordctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: coordctl %s [flags]%s\n\n%s\n\nflags (anywhere after coordctl):\n", cmd.name, cmd.args, cmd.about)
		fs.PrintDefaults()
	}
	e := &env{conn: &connFlags{}, stdout: stdout, stderr: stderr}
	e.conn.register(fs)
	body := cmd.flags(fs)
	if e.args, err = parseInterleaved(fs, append(leading, rest[1:]...)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if err := e.conn.check(); err != nil {
		fmt.Fprintf(stderr, "coordctl %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	return body(ctx, e)
}

// splitLeading splits args into the connection flags before the command
// (as operators type them: "coordctl -nats URL -job J status") and the
// rest, which starts with the command. It checks the leading flags on a
// set of their own; the command's flag set parses them again.
func splitLeading(args []string) (leading, rest []string, err error) {
	global := flag.NewFlagSet("coordctl", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	(&connFlags{}).register(global)
	if err := global.Parse(args); err != nil {
		return nil, nil, err
	}
	rest = global.Args()
	leading = args[:len(args)-len(rest)]
	if n := len(leading); n > 0 && leading[n-1] == "--" {
		leading = leading[:n-1]
	}
	return slices.Clip(leading), rest, nil
}

// parseInterleaved parses args with fs, letting flags follow positional
// arguments ("requeue s-1 -nats URL"), and returns the positional ones in
// order. Everything after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if len(left) == 0 {
			return positional, nil
		}
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			return append(positional, left...), nil
		}
		positional, args = append(positional, left[0]), left[1:]
	}
}

// commandNames lists the subcommands.
func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}
