package natsstore

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// maxDuplicateWindow is the longest duplicate window of a bucket's stream,
// the server's default and what jetstream.CreateKeyValue sets.
const maxDuplicateWindow = 2 * time.Minute

// kvStreamConfig returns the stream that jetstream.CreateKeyValue would
// create for cfg (the fields this store uses), except that a replicated
// bucket is created with direct gets off: it answers reads from its stream
// leader only (see leaderReads) from its first message on, so no client
// has to update the stream while it is still forming, and a concurrent
// CreateKeyValue, which turns direct gets back on when it finds them off,
// is not involved. js.KeyValue binds the stream as a bucket.
func kvStreamConfig(cfg jetstream.KeyValueConfig) jetstream.StreamConfig {
	sc := jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: int64(max(cfg.History, 1)),
		MaxBytes:          -1,
		MaxAge:            cfg.TTL,
		MaxMsgSize:        cfg.MaxValueSize,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		Storage:           cfg.Storage,
		Replicas:          max(cfg.Replicas, 1),
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        maxDuplicateWindow,
		AllowDirect:       cfg.Replicas <= 1,
		Discard:           jetstream.DiscardNew,
	}
	if cfg.TTL > 0 && cfg.TTL < maxDuplicateWindow {
		sc.Duplicates = cfg.TTL
	}
	if cfg.LimitMarkerTTL > 0 {
		sc.AllowMsgTTL = true
		sc.SubjectDeleteMarkerTTL = cfg.LimitMarkerTTL
	}
	return sc
}
