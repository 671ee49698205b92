package natsstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/natsstore"
)

// ExampleNew builds a store for a job on a replicated NATS cluster and
// uses it. It needs running servers, so it has no checked output; the
// package tests run the same flow against embedded servers.
func ExampleNew() {
	st, err := natsstore.New(natsstore.Config{
		Servers:     []string{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223", "nats://127.0.0.1:4224"},
		Job:         "backfill",
		Credentials: natsstore.Credentials{Username: "worker", Password: "s3cret"},
		Replicas:    3,
	}, 30*time.Second) // equal to coordination.Config.LeaseDuration
	if err != nil {
		fmt.Println(err) // Fatal: the configuration is invalid
		return
	}
	defer st.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, ok, err := st.Create(ctx, store.Durable, "greeting", []byte("hello"))
	if err != nil {
		fmt.Println(err) // Retryable (network) or Fatal (auth, TLS, version, buckets)
		return
	}
	fmt.Println(rev, ok)
}
