// Package pgtest starts throwaway PostgreSQL clusters for the tests, the
// examples and the benchmark programs: a real server (initdb, then the
// postgres binary) in a temporary directory, listening on a free 127.0.0.1
// port and on a Unix socket in that directory, removed by [Server.Remove].
//
// The server binaries are looked up on PATH, then through pg_config
// --bindir, then in /usr/lib/postgresql/<version>/bin (newest first).
// PostgreSQL refuses to run as root: when the process is root, initdb and
// the server run as the postgres system user, and the directory is owned by
// it. The server is started with a parent-death signal, so a test binary
// that dies does not leave it running.
//
// A server can be stopped (fast shutdown, as an operator restarts it),
// killed with SIGKILL (a crash: the restart recovers from the WAL) and
// started again on the same data directory and port.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallHint names what to install when no server binaries are found.
const InstallHint = "install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; it provides initdb and postgres under /usr/lib/postgresql/<version>/bin)"

// RequireEnv is the environment variable that turns a missing server into a
// failure instead of a skip: .ci/run sets it, so CI always runs the
// PostgreSQL tests.
const RequireEnv = "SPATE_REQUIRE_POSTGRES"

// readyTimeout bounds the wait for a started server to accept connections,
// crash recovery included.
const readyTimeout = 60 * time.Second

// ErrNoBinaries is returned by [Start] when no server binaries are found.
var ErrNoBinaries = errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) found on PATH, through pg_config --bindir or in /usr/lib/postgresql/*/bin; " + InstallHint)

// Server is one throwaway cluster. Its methods are safe for concurrent use.
type Server struct {
	bin  string // directory holding initdb and postgres
	dir  string // the temporary directory: data/, the socket, the log
	port int
	cred *syscall.Credential // nil unless the server runs as postgres

	mu  sync.Mutex
	cmd *exec.Cmd     // the running postmaster, or nil
	out chan struct{} // closed when cmd has exited
}

// FindBinaries returns the directory holding initdb and postgres, or
// ErrNoBinaries.
func FindBinaries() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

// versionOf returns the major version in /usr/lib/postgresql/<v>/bin, or 0.
func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start creates a cluster in a new temporary directory and starts it. The
// caller removes it with [Server.Remove]. Settings are extra server
// settings, "name=value" each.
func Start(settings ...string) (*Server, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	// A short path: the Unix socket's path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{bin: bin, dir: dir}
	if err := s.prepare(settings); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// prepare runs initdb and writes the settings.
func (s *Server) prepare(settings []string) error {
	if os.Geteuid() == 0 {
		cred, err := postgresUser()
		if err != nil {
			return err
		}
		s.cred = cred
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	initdb := exec.Command(filepath.Join(s.bin, "initdb"), "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = s.dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", s.port),
		fmt.Sprintf("unix_socket_directories = '%s'", s.dir),
		"max_connections = 300",
		"shared_buffers = 32MB",
		"logging_collector = off",
	}
	for _, kv := range settings {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("pgtest: setting %q is not name=value", kv)
		}
		conf = append(conf, fmt.Sprintf("%s = %s", strings.TrimSpace(name), strings.TrimSpace(value)))
	}
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + strings.Join(conf, "\n") + "\n"); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

// postgresUser returns the credential of the postgres system user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, the server must run as the postgres system user, which does not exist (%v); %s", err, InstallHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// DSN returns a URL connecting as the superuser postgres (no password)
// over TCP to database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Start starts the server on its data directory (again, after Stop or
// Kill) and waits until it accepts connections. A restart after Kill waits
// for the old server's processes to go and recovers from the WAL.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		err := s.launch(deadline)
		if err == nil {
			return nil
		}
		// After a SIGKILL the old backends may still hold the shared
		// memory for a moment; the new postmaster then exits at once.
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "exited") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// launch starts the postmaster once and waits for it to accept
// connections.
func (s *Server) launch(deadline time.Time) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir())
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
			s.cmd, s.out = cmd, exited
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("pgtest: postgres not accepting connections after %s: %v\n%s", readyTimeout, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTail returns the end of the server log, for errors.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop shuts the server down as pg_ctl stop -m fast does (SIGINT: active
// transactions are rolled back, clients disconnected) and waits for it.
// Stopping a stopped server does nothing.
func (s *Server) Stop() { s.signal(syscall.SIGINT) }

// Kill kills the postmaster with SIGKILL and waits for it to exit; its
// backends exit on their own when they notice. The next Start recovers.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// signal sends sig to the postmaster and waits for it to exit.
func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	<-s.out
	s.cmd, s.out = nil, nil
}

// CopyData copies the stopped server's data directory to dst (which must
// not exist), ownership kept: a backup, to restore with [Server.RestoreData]
// (an older copy of the database, as a failover to a lagging replica or a
// restored backup leaves it).
func (s *Server) CopyData(dst string) error {
	if err := s.stopped("CopyData"); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", s.dataDir(), dst).CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: copying the data directory: %v\n%s", err, out)
	}
	return nil
}

// RestoreData replaces the stopped server's data directory with a copy
// made by [Server.CopyData]; the copy stays.
func (s *Server) RestoreData(src string) error {
	if err := s.stopped("RestoreData"); err != nil {
		return err
	}
	if err := os.RemoveAll(s.dataDir()); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if out, err := exec.Command("cp", "-a", src, s.dataDir()).CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: restoring the data directory: %v\n%s", err, out)
	}
	return nil
}

// stopped returns an error naming op unless the server is stopped.
func (s *Server) stopped(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("pgtest: %s needs a stopped server; Stop it first", op)
	}
	return nil
}

// Remove stops the server (immediate shutdown) and removes its directory.
func (s *Server) Remove() {
	s.signal(syscall.SIGQUIT)
	_ = os.RemoveAll(s.dir)
}

// CreateDatabase creates database name (which must be a plain identifier).
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	return s.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// Exec runs sql as the superuser on database postgres.
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	return s.ExecOn(ctx, "postgres", sql, args...)
}

// ExecOn runs sql as the superuser on database db.
func (s *Server) ExecOn(ctx context.Context, db, sql string, args ...any) error {
	c, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// QueryRowOn runs sql with args as the superuser on database db and scans
// its one row into dest.
func (s *Server) QueryRowOn(ctx context.Context, db, sql string, args []any, dest ...any) error {
	c, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// clockTick is the kernel's accounting unit of /proc/<pid>/stat times
// (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPUTime returns the processor time the server has used so far: its
// postmaster's, its live backends' and that of the backends that exited
// (Linux /proc accounting, 10ms resolution). 0 when it is not running.
func (s *Server) CPUTime() time.Duration {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return 0
	}
	pm := cmd.Process.Pid
	total := procTicks(pm, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pm {
			continue
		}
		if parentOf(pid) == pm {
			total += procTicks(pid, false)
		}
	}
	return time.Duration(total) * clockTick
}

// statFields returns the fields of /proc/pid/stat after the command name.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// parentOf returns pid's parent, or 0.
func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// procTicks returns pid's user and system time in clock ticks, plus its
// waited-for children's when children is set.
func procTicks(pid int, children bool) int64 {
	f := statFields(pid) // f[11..14]: utime stime cutime cstime
	if len(f) < 15 {
		return 0
	}
	n := 2
	if children {
		n = 4
	}
	var t int64
	for _, v := range f[11 : 11+n] {
		x, _ := strconv.ParseInt(v, 10, 64)
		t += x
	}
	return t
}
