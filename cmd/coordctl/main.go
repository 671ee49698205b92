// Command coordctl inspects and operates a job coordinated by
// github.com/spate-go/coordination through NATS JetStream KV or
// PostgreSQL:
//
//	go run ./cmd/coordctl status -nats nats://127.0.0.1:4222 -job orders-backfill-2026
//	go run ./cmd/coordctl status -splits -json ...   # one row per split, as JSON
//	go run ./cmd/coordctl watch ...                  # live view until Ctrl-C
//	go run ./cmd/coordctl requeue -all-quarantined ...
//	go run ./cmd/coordctl delete-job -yes ...
//	go run ./cmd/coordctl audit [-follow] ...        # exits 3 on a fencing violation
//
// The connection flags, before or after the command, name the store and
// the job: -store URL (nats:// or postgres://) or -nats URL (repeated or
// comma-separated), -job NAME, and on NATS -user with -password-file,
// -token-file, -creds, -tls-ca, -tls-cert, -tls-key; -timeout bounds the
// operations. The job's lease is read from the job. Secrets are read from
// files and never printed. coordctl never creates a job's buckets or
// schema. Run "coordctl -h" for the commands and "coordctl <command> -h"
// for their flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spate-go/coordination/internal/coordctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := coordctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
