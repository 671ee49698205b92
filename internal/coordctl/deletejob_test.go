package coordctl

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
)

// TestDeleteJobFinishesAHalfDeletedJob removes one bucket of a NATS job by
// hand, as an interrupted cleanup leaves it: status names the missing
// bucket and the fix, and delete-job removes what remains.
func TestDeleteJobFinishesAHalfDeletedJob(t *testing.T) {
	for _, gone := range []string{"state", "lease"} {
		t.Run(gone+" gone", func(t *testing.T) {
			url := startNATS(t)
			be := backend{name: "nats", conn: []string{"-nats", url}}
			st, err := natsstore.New(natsstore.Config{Servers: []string{url}, Job: "half"}, testLease)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := t.Context()
			for _, ks := range []store.Keyspace{store.Durable, store.Ephemeral} {
				if _, _, err := st.Create(ctx, ks, "k", []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			nc, err := nats.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			bucket := "coordination_half_" + gone
			if err := js.DeleteKeyValue(ctx, bucket); err != nil {
				t.Fatal(err)
			}
			if code, _, stderr := ctl(t, ctx, be, "half", "status"); code != ExitError || !strings.Contains(stderr, "bucket "+bucket+" does not exist") || !strings.Contains(stderr, "coordctl delete-job") {
				t.Fatalf("status of the half-deleted job: exit %d, %q; want an error naming %s and delete-job", code, stderr, bucket)
			}
			if code, out, stderr := ctl(t, ctx, be, "half", "delete-job", "-yes"); code != ExitOK || !strings.Contains(out, `deleted job "half"`) {
				t.Fatalf("delete-job -yes of the half-deleted job: exit %d, %q %q", code, out, stderr)
			}
			for name := range js.KeyValueStoreNames(ctx).Name() {
				t.Errorf("bucket %s is left after delete-job", name)
			}
		})
	}
}
