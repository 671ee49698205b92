package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination"
)

// maxValueSize is the store's value cap (512 KiB).
const maxValueSize = 512 * 1024

// bucketMaxMsgSize is the max message size the buckets are created with:
// the server counts the headers of a write (the expected revision, the
// delete marker) against it, so a value at the cap needs some room above
// 512 KiB. An adopted bucket must allow at least this much.
const bucketMaxMsgSize = maxValueSize + 1024

// bucketName returns the bucket of the Durable (state) or Ephemeral (lease)
// keyspace.
func (s *Store) bucketName(lease bool) string {
	if lease {
		return "coordination_" + s.cfg.Job + "_lease"
	}
	return "coordination_" + s.cfg.Job + "_state"
}

// bucketConfig returns the bucket settings: Config.History messages per key
// in the state bucket and one in the lease bucket, 512 KiB
// values plus headers, file storage, the configured replicas. The lease
// bucket's TTL applies to every message, so each write restarts its key's
// clock; limit markers make expiry visible to watches. Per-key TTLs are never used: they
// apply to a key's create only and would be lost on its next update.
func (s *Store) bucketConfig(lease bool) jetstream.KeyValueConfig {
	what := "state"
	if lease {
		what = "leases"
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:       s.bucketName(lease),
		Description:  "spate coordination " + what + " of job " + s.cfg.Job,
		History:      uint8(s.cfg.history()),
		MaxValueSize: bucketMaxMsgSize,
		Replicas:     s.cfg.replicas(),
		Storage:      jetstream.FileStorage,
	}
	if lease {
		cfg.History = 1
		cfg.TTL = s.leaseTTL
		cfg.LimitMarkerTTL = s.leaseTTL
	}
	return cfg
}

// kvBucket is one provisioned bucket. stream reads the bucket's last
// sequence under a key filter, which ends the snapshots of watches and
// listings (see lastUnder); on a replicated bucket it reads from the stream
// leader.
type kvBucket struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
	// missing is set, instead of kv, for a bucket that Config.ExistingOnly
	// found absent: the Fatal every operation on it returns.
	missing error
}

// Provisioning asks JetStream in steps, the first of minProvisionStep,
// each next one twice as long, up to maxProvisionStep. While several
// clients create a new replicated bucket, the cluster can leave a request
// unanswered (a stream info read while the stream is being formed), a
// server that has not applied the new stream yet can answer "not found",
// and the stream can take a while to elect its leader (see
// awaitStreamLeader): such a step is not waited out but made again from
// the start, after leaderPoll. Every step is idempotent and the re-read
// usually finds the work done; the growing steps let a slow server answer.
const (
	minProvisionStep = 250 * time.Millisecond
	maxProvisionStep = 2 * time.Second
)

// errNotYetVisible marks a bucket that was just created (by this store or
// a concurrent one) but that the server read next does not know yet.
var errNotYetVisible = errors.New("the new bucket is not visible yet")

// provision opens the bucket, creating it when it does not exist (a
// concurrent creator winning is fine) unless Config.ExistingOnly is set, and
// verifies an existing bucket's settings. An attempt whose request went
// unanswered within its step, or that could not see the bucket it had just
// created, is made again until ctx is done.
func (s *Store) provision(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (kvBucket, error) {
	for d := minProvisionStep; ; d = min(2*d, maxProvisionStep) {
		step, cancel := context.WithTimeout(ctx, d)
		b, err := s.provisionOnce(step, js, cfg)
		again := step.Err() != nil || errors.Is(err, errNotYetVisible)
		cancel()
		if err == nil || !again || ctx.Err() != nil {
			return b, err
		}
		s.log.Debug("provisioning a bucket again", "bucket", cfg.Bucket, "err", err)
		if !pause(ctx, leaderPoll) {
			return kvBucket{}, err
		}
	}
}

// pause waits d and reports true, or false if ctx is done first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// provisionOnce makes one attempt of provision.
func (s *Store) provisionOnce(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (kvBucket, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && s.cfg.ExistingOnly {
		return kvBucket{missing: coordination.Errorf(coordination.Fatal, "natsstore: bucket %s does not exist, but the job's other bucket does: job %q is half deleted (finish with coordctl delete-job): %w", cfg.Bucket, s.cfg.Job, err)}, nil
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = js.CreateStream(ctx, kvStreamConfig(cfg))
		if err == nil || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				err = fmt.Errorf("%w (%w)", errNotYetVisible, err)
			}
		}
	}
	if err != nil {
		return kvBucket{}, s.openErr(ctx, "opening bucket "+cfg.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return kvBucket{}, s.openErr(ctx, "reading the status of bucket "+cfg.Bucket, err)
	}
	if err := s.verifyBucket(cfg, st.Config()); err != nil {
		return kvBucket{}, err
	}
	return s.leaderReads(ctx, js, kv, st)
}

// leaderReads makes a replicated bucket answer reads from its stream
// leader only. Direct gets (the KV default) may be answered by a follower
// that has not yet applied the latest write, delete or expiry, so a Get
// could return a key that is already gone, and the absent-key checks of
// Create and Delete could misjudge. A single-replica bucket has no
// followers and is left as it is. A bucket this store created has direct
// gets off from the start (see kvStreamConfig); one created otherwise is
// updated.
func (s *Store) leaderReads(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, st jetstream.KeyValueStatus) (kvBucket, error) {
	name := kv.Bucket()
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); !ok || bs.StreamInfo().Config.Replicas <= 1 {
		stream, err := js.Stream(ctx, "KV_"+name)
		if err != nil {
			return kvBucket{}, s.openErr(ctx, "opening the stream of bucket "+name, err)
		}
		return kvBucket{kv: kv, stream: stream}, nil
	}
	stream, err := s.awaitStreamLeader(ctx, js, name)
	if err != nil {
		return kvBucket{}, err
	}
	if sc := stream.CachedInfo().Config; sc.AllowDirect && s.cfg.ExistingOnly {
		// A tool that inspects a job changes nothing of it: its gets, and
		// the reads of the last sequence that end its listings and
		// watches' snapshots (lastUnder), may be answered by a replica
		// behind the leader.
		s.log.Debug("bucket has direct gets on; reading it as it is", "bucket", name)
	} else if sc.AllowDirect {
		sc.AllowDirect = false
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return kvBucket{}, s.openErr(ctx, "turning off direct gets on bucket "+name, err)
		}
		// The client decides between direct and leader gets from the
		// stream info it read when opening the bucket or the stream:
		// open both again.
		if kv, err = js.KeyValue(ctx, name); err != nil {
			return kvBucket{}, s.openErr(ctx, "opening bucket "+name, err)
		}
		if stream, err = js.Stream(ctx, "KV_"+name); err != nil {
			return kvBucket{}, s.openErr(ctx, "opening the stream of bucket "+name, err)
		}
	}
	return kvBucket{kv: kv, stream: stream}, nil
}

// leaderPoll is the pause before checking a new stream's leader again,
// or provisioning a bucket again.
const leaderPoll = 20 * time.Millisecond

// errNoLeader reports a stream whose info names no leader yet.
var errNoLeader = errors.New("the stream has no leader yet")

// awaitStreamLeader returns the stream of the bucket once its leader
// answers, or an error when ctx (a provisioning step) ends first. A
// replicated stream is created before its RAFT group has elected a
// leader; until then a request only the leader answers (a leader get, a
// consumer create, a stream update) gets no answer at all and waits out
// its whole timeout. The first client's create returns once the leader is
// elected, but the others, whose create found the stream already
// proposed, return at once, with stream info that names no leader: they
// wait here until a leader get is answered.
func (s *Store) awaitStreamLeader(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	for {
		stream, err := leaderAnswers(ctx, js, name)
		if err == nil {
			return stream, nil
		}
		if !errors.Is(err, errNoLeader) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, s.openErr(ctx, "opening the stream of bucket "+name, err)
		}
		if !pause(ctx, leaderPoll) {
			return nil, s.ctxErr("waiting for the stream of bucket "+name+" to elect a leader", fmt.Errorf("%w (%w)", ctx.Err(), err))
		}
	}
}

// leaderAnswers reads the stream of the bucket and, if its info names a
// leader, asks the leader for the bucket's last message.
func leaderAnswers(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	stream, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, err
	}
	if ci := stream.CachedInfo().Cluster; ci != nil && ci.Leader == "" {
		return nil, errNoLeader
	}
	if _, err := stream.GetLastMsgForSubject(ctx, "$KV."+name+".>"); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, err
	}
	return stream, nil
}

// lastUnder returns the sequence of the last message under the key filter
// (0 when there is none), from the stream leader on a replicated bucket
// with direct gets off (see leaderReads).
func (b kvBucket) lastUnder(ctx context.Context, filter string) (uint64, error) {
	m, err := b.stream.GetLastMsgForSubject(ctx, "$KV."+b.kv.Bucket()+"."+filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// verifyBucket checks an existing bucket against the settings this store
// needs. A replica count different from the configuration is only logged.
func (s *Store) verifyBucket(want, got jetstream.KeyValueConfig) error {
	if got.TTL != want.TTL {
		if want.TTL == 0 {
			return coordination.Errorf(coordination.Fatal, "natsstore: bucket %s was created with TTL %s, but the state bucket must not expire; remove the job's buckets to recreate it", want.Bucket, got.TTL)
		}
		if s.cfg.ExistingOnly {
			return coordination.Errorf(coordination.Fatal, "natsstore: bucket %s was created with TTL %s, but this store's lease TTL is %s; give the store the job's lease duration, %s (JobLeaseTTL reads it)", want.Bucket, got.TTL, want.TTL, got.TTL)
		}
		return coordination.Errorf(coordination.Fatal, "natsstore: bucket %s was created with TTL %s, but this store's lease TTL is %s; a job's lease duration is fixed once it starts (remove the job's buckets to change it)", want.Bucket, got.TTL, want.TTL)
	}
	if want.LimitMarkerTTL > 0 && got.LimitMarkerTTL <= 0 {
		return coordination.Errorf(coordination.Fatal, "natsstore: bucket %s has no limit markers, so expiry would be invisible to watches; remove the job's buckets to recreate it", want.Bucket)
	}
	if got.MaxValueSize > 0 && got.MaxValueSize < bucketMaxMsgSize {
		return coordination.Errorf(coordination.Fatal, "natsstore: bucket %s has a max value size of %d bytes, below the required %d (512 KiB of value plus room for headers); remove the job's buckets to recreate it", want.Bucket, got.MaxValueSize, bucketMaxMsgSize)
	}
	if got.History != want.History {
		s.log.Warn("bucket history depth differs from the configuration; keeping the bucket's", "bucket", want.Bucket, "history", got.History, "configured", want.History)
	}
	if got.Replicas != want.Replicas {
		s.log.Warn("bucket replica count differs from the configuration; keeping the bucket's", "bucket", want.Bucket, "replicas", got.Replicas, "configured", want.Replicas)
	}
	return nil
}

// DeleteJob removes the job's two buckets, and with them every record of
// the job: its plan, splits, progress, assignments, leader and presence
// keys. A bucket that does not exist counts as removed. It connects first
// if needed and does not check whether workers are live (coordctl
// delete-job does). Errors are Retryable (server or connection) or Fatal
// (a closed store, or ExistingOnly with a missing bucket at connection).
// Afterwards use the store for nothing but Close: its bucket handles are
// gone.
func (s *Store) DeleteJob(ctx context.Context) error {
	c, err := s.client(ctx)
	if err != nil {
		return err
	}
	if err := s.awaitUp(ctx, c); err != nil {
		return err
	}
	for _, lease := range []bool{false, true} {
		name := s.bucketName(lease)
		if err := c.js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s.openErr(ctx, "deleting bucket "+name, err)
		}
	}
	return nil
}
