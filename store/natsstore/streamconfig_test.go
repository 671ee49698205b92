package natsstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestKVStreamConfigMatchesCreateKeyValue creates each bucket shape of the
// store twice on one server, once through jetstream.CreateKeyValue and once
// from kvStreamConfig, and compares what the server made of them: apart
// from the name and subjects they must be the same stream, so a bucket this
// store creates is one any KV client binds and a future jetstream release
// that changes its buckets is noticed here. Direct gets differ only for a
// replicated bucket, which one server cannot hold.
func TestKVStreamConfigMatchesCreateKeyValue(t *testing.T) {
	t.Parallel()
	st := &Store{cfg: Config{Job: "ref", History: 8}, leaseTTL: 3 * time.Second}
	js := jsFor(t, startServer(t))
	for _, lease := range []bool{false, true} {
		kc := st.bucketConfig(lease)
		ref, err := js.CreateKeyValue(opCtx(t), kc)
		if err != nil {
			t.Fatal(err)
		}
		refStatus, err := ref.Status(opCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		want := refStatus.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
		kc.Bucket += "_ours"
		got, err := js.CreateStream(opCtx(t), kvStreamConfig(kc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.KeyValue(opCtx(t), kc.Bucket); err != nil {
			t.Fatalf("binding the created stream as a bucket: %v", err)
		}
		gc := got.CachedInfo().Config
		gc.Name, gc.Subjects = want.Name, want.Subjects
		if !reflect.DeepEqual(gc, want) {
			t.Errorf("lease=%v: stream config\n got %+v\nwant %+v", lease, gc, want)
		}
	}
	if !kvStreamConfig(jetstream.KeyValueConfig{Bucket: "b", Replicas: 1}).AllowDirect || kvStreamConfig(jetstream.KeyValueConfig{Bucket: "b", Replicas: 3}).AllowDirect {
		t.Error("direct gets must be on for one replica and off for three")
	}
}
