package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockName is the lock file a run holds in its embedded server's store
// directory for as long as it uses it.
const lockName = "backfill.lock"

// errStoreInUse marks a store directory another live process holds.
var errStoreInUse = errors.New("in use")

// storeLock is a run's hold on a store directory: an exclusive lock on the
// directory's lock file, which the system releases when the process ends,
// however it ends (kill -9 included), so a dead run never blocks the next.
type storeLock struct {
	dir string
	f   *os.File
}

// lockStore creates dir if needed and locks it for this process. When
// another live process holds it, the error wraps errStoreInUse and names
// that process (its pid and start time, from the lock file).
func lockStore(dir string) (*storeLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded NATS store: %w", err)
	}
	path := filepath.Join(dir, lockName)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS store: %w", err)
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("embedded NATS store: locking %s: %w", path, err)
		}
		if !held {
			holder, _ := os.ReadFile(path)
			f.Close()
			return nil, fmt.Errorf("store %s is %w by %s", dir, errStoreInUse, describeHolder(string(holder)))
		}
		// The previous holder may have removed the file between our open
		// and our lock (its clean-up after a completed job): then we hold
		// a lock on a file no one else can see, so open the path again.
		if same, err := samePath(f, path); err != nil || !same {
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("embedded NATS store: %w", err)
			}
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = fmt.Fprintf(f, "pid %d, started %s\n", os.Getpid(), time.Now().Format(time.RFC3339))
		}
		return &storeLock{dir: dir, f: f}, nil
	}
}

// describeHolder renders what the lock file says of the process holding it.
func describeHolder(contents string) string {
	if s := strings.TrimSpace(contents); s != "" {
		return "another backfill run (" + s + ")"
	}
	return "another backfill run"
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, now), nil
}

// release gives the directory up, removing it first when remove is set
// (the job completed): everything but the lock file while the lock is still
// held, then the lock file, then the directory itself unless a new run has
// meanwhile started in it.
func (l *storeLock) release(remove bool) error {
	var errs []error
	if remove {
		entries, err := os.ReadDir(l.dir)
		errs = append(errs, err)
		for _, e := range entries {
			if e.Name() != lockName {
				errs = append(errs, os.RemoveAll(filepath.Join(l.dir, e.Name())))
			}
		}
		errs = append(errs, os.Remove(filepath.Join(l.dir, lockName)))
	}
	errs = append(errs, l.f.Close())
	if remove {
		_ = os.Remove(l.dir) // fails, harmlessly, if a new run has started in it
	}
	return errors.Join(errs...)
}
