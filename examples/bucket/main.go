// Command bucket reads a bucket of newline-delimited JSON files with four
// workers, counts every line and checks that each was delivered exactly
// once. It shows sources/objects: a planner that lists the bucket as an
// open plan, splits weighted by bytes (small files grouped, the large one
// divided into byte ranges, .gz files read whole) and a source that hands
// every line to a function with its object key and offset.
//
// Run it with no arguments:
//
//	go run ./examples/bucket
//
// It writes NDJSON files of uneven sizes to a temporary directory (one of
// them over a quarter of the bytes, two of them gzipped), opens it as a
// fileblob bucket, and runs 4 workers in this process over an in-memory
// coordination store. The exit status is 0 only when every line of every
// file was delivered exactly once; 1 on a miss or a duplicate.
//
// -bucket reads any bucket gocloud.dev/blob opens by URL instead (the
// lines are then counted by reading every object again after the job):
//
//	go run ./examples/bucket -bucket 'file:///var/data/events'
//	go run ./examples/bucket -bucket 's3://my-logs?region=eu-west-1' -prefix 2026/12/
//
// The S3 form takes the AWS SDK's default credentials (environment,
// ~/.aws, instance role); add the gcsblob or azureblob import for gs:// or
// azblob:// URLs. A real fleet runs one worker per process over NATS
// JetStream or PostgreSQL (see the backfill example), each with the same
// planner configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bucket:", err)
		os.Exit(2)
	}
	os.Exit(run(ctx, cfg, os.Stdout))
}

// config is what the flags say.
type config struct {
	bucket     string // a gocloud URL; "" generates files in a temporary directory
	prefix     string
	workers    int
	files      int
	bytes      int64
	splitBytes int64
	verbose    bool
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bucket", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.bucket, "bucket", "", "gocloud bucket URL to read (file:///dir, s3://name?region=r, mem://); empty: generate NDJSON files in a temporary directory")
	fs.StringVar(&c.prefix, "prefix", "", "key prefix to read")
	fs.IntVar(&c.workers, "workers", 4, "workers in this process")
	fs.IntVar(&c.files, "files", 24, "files to generate (without -bucket)")
	fs.Int64Var(&c.bytes, "bytes", 16<<20, "bytes to generate in all (without -bucket)")
	fs.Int64Var(&c.splitBytes, "split-bytes", 1<<20, "bytes a split aims at")
	fs.BoolVar(&c.verbose, "v", false, "log the coordination's info records")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.workers < 1:
		return c, fmt.Errorf("-workers %d: run at least one worker", c.workers)
	case c.bucket == "" && c.files < 2:
		return c, fmt.Errorf("-files %d: generate at least 2 files", c.files)
	case c.bucket == "" && c.bytes < int64(c.files):
		return c, fmt.Errorf("-bytes %d: generate at least a byte per file", c.bytes)
	case c.splitBytes < 1:
		return c, fmt.Errorf("-split-bytes %d: give a positive size", c.splitBytes)
	}
	return c, nil
}

// logger returns the workers' logger: warnings only unless verbose.
func (c config) logger() *slog.Logger {
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
