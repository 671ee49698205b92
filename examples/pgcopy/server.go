package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// A throwaway PostgreSQL server for the example, started the way the
// library's tests start theirs (a small copy of internal/pgtest, which an
// example must not import): initdb in a temporary directory, then the
// postgres binary on a free 127.0.0.1 port, as the postgres system user
// when the process runs as root. It dies with the example (parent-death
// signal) and remove deletes its directory.

// server is one running throwaway server.
type server struct {
	dir  string
	port int
	cmd  *exec.Cmd
}

// findBinaries returns the directory holding initdb and postgres.
func findBinaries() (string, error) {
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
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil && has(strings.TrimSpace(string(out))) {
		return strings.TrimSpace(string(out)), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) }) // newest first
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb, postgres) found on PATH, through pg_config or in /usr/lib/postgresql/*/bin: install the PostgreSQL server, or pass -postgres DSN")
}

// startServer initializes and starts a throwaway server.
func startServer() (*server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgcopy")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("running as root, the server must run as the postgres system user, which does not exist: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.remove()
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.remove()
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nmax_connections = 200\nshared_buffers = 128MB\nfsync = off\nsynchronous_commit = off\n", s.port, dir)
	if err := appendFile(filepath.Join(data, "postgresql.conf"), conf); err != nil {
		s.remove()
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		s.remove()
		return nil, err
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.remove()
		return nil, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.dsn())
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
			return s, nil
		}
		if time.Now().After(deadline) {
			s.remove()
			return nil, fmt.Errorf("the throwaway server accepts no connections after 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // waiting for the server to accept connections
	}
}

// dsn connects as the superuser over TCP.
func (s *server) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// remove stops the server (immediate shutdown) and deletes its directory.
func (s *server) remove() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		_ = s.cmd.Wait()
	}
	_ = os.RemoveAll(s.dir)
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}
