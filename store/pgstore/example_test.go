package pgstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/pgstore"
)

// ExampleNew builds a store for a job on a PostgreSQL database and uses it.
// It needs a running server, so it has no checked output; the package
// tests run the same flow against a throwaway server.
func ExampleNew() {
	st, err := pgstore.New(pgstore.Config{
		DSN: "postgres://worker@db.internal:5432/pipelines?sslmode=verify-full",
		Job: "backfill",
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
		fmt.Println(err) // Retryable (network, restart) or Fatal (auth, GRANTs, TLS)
		return
	}
	fmt.Println(rev, ok)
}
