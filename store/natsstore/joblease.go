package natsstore

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
)

// probeLease is the lease TTL of the store JobLeaseTTL reads through: it
// only sets the connection's timing (network steps of up to 10s).
const probeLease = 30 * time.Second

// JobLeaseTTL reads the lease TTL job cfg.Job was started with (the TTL of
// its lease bucket), for tools that open a job without knowing its
// LeaseDuration (coordctl): pass it to [New]. It connects with cfg,
// creates and changes nothing, and closes its connection before it
// returns. A missing lease bucket is Fatal naming it and wraps
// jetstream.ErrBucketNotFound; network failures are Retryable.
func JobLeaseTTL(ctx context.Context, cfg Config) (time.Duration, error) {
	cfg.ExistingOnly = true
	s, err := New(cfg, probeLease)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	c, err := s.connectServer(ctx)
	if err != nil {
		return 0, err
	}
	defer c.release()
	name := s.bucketName(true)
	kv, err := c.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, coordination.Errorf(coordination.Fatal, "natsstore: bucket %s does not exist: no worker has started job %q on this server, or its lease bucket was deleted (check Job and the server URLs): %w", name, cfg.Job, err)
	}
	if err != nil {
		return 0, s.openErr(ctx, "opening bucket "+name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, s.openErr(ctx, "reading the status of bucket "+name, err)
	}
	if ttl := st.TTL(); ttl >= MinLeaseTTL {
		return ttl, nil
	}
	return 0, coordination.Errorf(coordination.Fatal, "natsstore: bucket %s has a TTL of %s, so it is not the lease bucket of a job (at least %s); check Job", name, st.TTL(), MinLeaseTTL)
}
