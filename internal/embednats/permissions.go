package embednats

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// ReadmeJob is the job the NATS permission block of docs/nats.md (once
// the README's) is written for.
const ReadmeJob = "orders-backfill-2026"

// permissionBlock matches docs/nats.md's nats-server configuration block.
var permissionBlock = regexp.MustCompile("(?s)```text\n(# nats-server configuration: the users of job " + ReadmeJob + "\n.*?)```")

// ReadmeUsers parses the nats-server permission block of the guide at
// path (docs/nats.md), written for ReadmeJob, as the block for job, with the worker's and
// the read-only user's passwords: the users of a test server, so that the
// documented permission sets are the tested ones. It returns the worker
// (user job+"-worker") first, then the read-only user (job+"-ops").
func ReadmeUsers(path, job, workerPassword, opsPassword string) ([]*server.User, error) {
	readme, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := permissionBlock.FindSubmatch(readme)
	if m == nil {
		return nil, fmt.Errorf("%s has no nats-server permission block for job %s", path, ReadmeJob)
	}
	conf := strings.NewReplacer(ReadmeJob, job, "$WORKER_PASSWORD", fmt.Sprintf("%q", workerPassword), "$OPS_PASSWORD", fmt.Sprintf("%q", opsPassword)).Replace(string(m[1]))
	dir, err := os.MkdirTemp("", "permissions-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "users.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		return nil, fmt.Errorf("the permission block of %s does not parse: %w", path, err)
	}
	users := opts.Users
	if len(users) != 2 || users[0].Username != job+"-worker" || users[1].Username != job+"-ops" {
		return nil, fmt.Errorf("the permission block of %s must define the users %s-worker and %s-ops, in that order", path, ReadmeJob, ReadmeJob)
	}
	return users, nil
}

// ViolationLog is a server logger that keeps the permission violations the
// server reports (install it with SetLogger) and drops everything else.
type ViolationLog struct {
	mu    sync.Mutex
	lines []string
}

// record keeps one log line if it reports a violation.
func (l *ViolationLog) record(format string, v ...any) {
	if line := fmt.Sprintf(format, v...); strings.Contains(line, "Violation") {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, line)
	}
}

// Seen returns the violations reported so far.
func (l *ViolationLog) Seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// Refused reports whether the server refused user anything so far.
func (l *ViolationLog) Refused(user string) bool {
	return slices.ContainsFunc(l.Seen(), func(v string) bool { return strings.Contains(v, "/user:"+user+`"`) })
}

// Noticef implements server.Logger.
func (l *ViolationLog) Noticef(format string, v ...any) { l.record(format, v...) }

// Warnf implements server.Logger.
func (l *ViolationLog) Warnf(format string, v ...any) { l.record(format, v...) }

// Fatalf implements server.Logger.
func (l *ViolationLog) Fatalf(format string, v ...any) { l.record(format, v...) }

// Errorf implements server.Logger.
func (l *ViolationLog) Errorf(format string, v ...any) { l.record(format, v...) }

// Debugf implements server.Logger.
func (l *ViolationLog) Debugf(format string, v ...any) { l.record(format, v...) }

// Tracef implements server.Logger.
func (l *ViolationLog) Tracef(format string, v ...any) { l.record(format, v...) }
