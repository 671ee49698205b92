package examplekit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store/natsstore"
)

// Flags is an example's flag set: -h prints usage then the flags, and every
// mistake prints "<name>: <mistake>", a blank line and the same usage.
type Flags struct {
	*flag.FlagSet
	name   string
	stderr io.Writer
}

// NewFlags returns the flag set of the program name, whose -h output starts
// with usage. Everything it prints goes to stderr.
func NewFlags(name, usage string, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return &Flags{FlagSet: fs, name: name, stderr: stderr}
}

// Parse parses args, refusing positional arguments (every setting is a
// flag). A mistake has been printed with the usage when it returns an
// error; -h returns flag.ErrHelp.
func (f *Flags) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return f.Bad("unexpected argument %q (all settings are flags)", f.Arg(0))
	}
	return nil
}

// Bad prints the mistake and the usage and returns the mistake as an error.
func (f *Flags) Bad(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	fmt.Fprintf(f.stderr, "%s: %v\n\n", f.name, err)
	f.Usage()
	return err
}

// Given reports whether the flag name was set on the command line.
func (f *Flags) Given(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}

// ParseStatus maps what a Parse (or a later check) returned to the exit
// status to return at once, and whether to return: 0 after -h, ExitBadFlags
// after a mistake, nothing to return when err is nil.
func ParseStatus(err error) (code int, done bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, true
	default:
		return ExitBadFlags, true
	}
}

// Common are the flags both examples take to run against a NATS server of
// the user's and to bound and log a run.
type Common struct {
	NATS     string        // -nats: server URL; "" runs an embedded server
	Instance string        // -instance: run one worker with this id; "" runs a fleet
	Timeout  time.Duration // -timeout: bound on the whole run
	Log      string        // -log: library log level (see Logger)
}

// Register defines -nats, -instance, -timeout and -log on fs. instance is
// the -instance help, which says what else a worker of that example needs.
func (c *Common) Register(fs *flag.FlagSet, instance string) {
	fs.StringVar(&c.NATS, "nats", "", "NATS server URL (nats://host:port or tls://host:port) instead of the embedded server")
	fs.StringVar(&c.Instance, "instance", "", instance)
	fs.DurationVar(&c.Timeout, "timeout", 5*time.Minute, "bound on the whole run, shutdown included: the work stops early enough to stop cleanly and report what is missing")
	fs.StringVar(&c.Log, "log", "warn", "library log level: "+levelNames)
}

// Check returns the first mistake in the common flags, printed with the
// usage through f, or nil.
func (c *Common) Check(f *Flags) error {
	switch {
	case c.Timeout <= 0:
		return f.Bad("-timeout must be positive, got %s", c.Timeout)
	}
	if c.NATS != "" {
		// As the store will check it: the client splits it at commas.
		var bad *coordination.Error
		if err := (natsstore.Config{Servers: []string{c.NATS}, Job: "j"}).Validate(); errors.As(err, &bad) {
			return f.Bad("-nats: %s", strings.TrimPrefix(bad.Reason, "natsstore: Servers[0]: "))
		}
	}
	if _, ok := logLevels[c.Log]; !ok {
		return f.Bad("-log must be %s, got %q", levelNames, c.Log)
	}
	if c.Instance != "" {
		cfg := coordination.DefaultConfig()
		cfg.InstanceID = c.Instance
		if err := cfg.Validate(); err != nil {
			return f.Bad("-instance: %v", err)
		}
	}
	return nil
}

// Names returns the instance ids of the workers this process runs: -instance
// alone, or w1..wn for a fleet of n.
func (c *Common) Names(n int) []string {
	if c.Instance != "" {
		return []string{c.Instance}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i+1)
	}
	return names
}
