package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/internal/embednats"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
)

// env is the run's store server, NATS or PostgreSQL. On NATS: an embedded
// server (loopback, random port, JetStream in a temporary directory removed
// by close) and one raw client connection for the baselines and for
// removing a figure's buckets. On PostgreSQL: a throwaway server (see
// pgEnv).
type env struct {
	srv   *server.Server
	dir   string
	nc    *nats.Conn
	js    jetstream.JetStream
	pg    *pgEnv // nil on NATS
	lease time.Duration
	grace time.Duration // every worker's StartupGrace
}

// startEnv starts the server of kind ("nats" or "postgres") and connects
// the raw client.
func startEnv(kind string, lease, grace time.Duration) (*env, error) {
	if kind == storePostgres {
		pg, err := startPG()
		if err != nil {
			return nil, err
		}
		return &env{pg: pg, lease: lease, grace: grace}, nil
	}
	dir, err := os.MkdirTemp("", "bench-fleet-nats-")
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv, err := embednats.Start(dir)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	e := &env{srv: srv, dir: dir, lease: lease, grace: grace}
	if e.nc, err = nats.Connect(srv.ClientURL()); err != nil {
		return nil, errors.Join(fmt.Errorf("embedded nats: connecting: %w", err), e.close())
	}
	if e.js, err = jetstream.New(e.nc); err != nil {
		return nil, errors.Join(fmt.Errorf("embedded nats: %w", err), e.close())
	}
	return e, nil
}

// store returns a store for job on the run's server, with the run's lease
// TTL: a natsstore, or a pgstore with its own pool.
func (e *env) store(job string) (store.Store, error) {
	if e.pg != nil {
		return e.pg.store(job, e.lease)
	}
	return natsstore.New(natsstore.Config{Servers: []string{e.srv.ClientURL()}, Job: job}, e.lease)
}

// rawKV is the raw baseline of F5: one key rewritten by compare-and-swap
// with nothing else, a plain KV bucket on NATS, a plain table's
// UPDATE ... WHERE rev = $1 on PostgreSQL.
type rawKV interface {
	create(ctx context.Context, val []byte) (uint64, error)
	update(ctx context.Context, val []byte, rev uint64) (uint64, error)
	name() string
}

// natsKV is rawKV on a plain KV bucket.
type natsKV struct{ kv jetstream.KeyValue }

func (k natsKV) create(ctx context.Context, val []byte) (uint64, error) {
	return k.kv.Create(ctx, "raw", val)
}

func (k natsKV) update(ctx context.Context, val []byte, rev uint64) (uint64, error) {
	return k.kv.Update(ctx, "raw", val, rev)
}

func (natsKV) name() string { return "raw KV Update" }

// rawStore returns F5's raw baseline named name.
func (e *env) rawStore(ctx context.Context, name string) (rawKV, error) {
	if e.pg != nil {
		return e.pg.rawTable(ctx, name)
	}
	kv, err := e.rawBucket(ctx, name)
	return natsKV{kv}, err
}

// rawBucket creates a plain KV bucket configured like natsstore's durable
// one (history 1, file storage), for the raw-KV baselines.
func (e *env) rawBucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	kv, err := e.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:  name,
		History: 1,
		Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("raw bucket %s: %w", name, err)
	}
	return kv, nil
}

// dropJob removes the buckets of job (natsstore names them
// coordination_<job>_state and _lease) and any raw buckets named, so one
// figure's data does not weigh on the next. Missing buckets are fine.
func (e *env) dropJob(job string, raw ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.pg != nil {
		return e.pg.drop(ctx, job, raw...)
	}
	names := append([]string{"coordination_" + job + "_state", "coordination_" + job + "_lease"}, raw...)
	var errs []error
	for _, b := range names {
		if err := e.js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			errs = append(errs, fmt.Errorf("removing bucket %s: %w", b, err))
		}
	}
	return errors.Join(errs...)
}

// close disconnects, shuts the server down and removes its directory,
// retrying the removal a few times: the server's store may still be
// flushing files just after shutdown.
func (e *env) close() error {
	if e.pg != nil {
		e.pg.close()
		return nil
	}
	if e.nc != nil {
		e.nc.Close()
	}
	embednats.Stop(e.srv)
	var err error
	for try := range 5 {
		if err = os.RemoveAll(e.dir); err == nil {
			return nil
		}
		time.Sleep(time.Duration(try+1) * 100 * time.Millisecond) // cleanup backoff
	}
	return fmt.Errorf("removing the server's store %s: %w", e.dir, err)
}
