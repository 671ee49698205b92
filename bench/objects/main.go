// Command objects measures one lane of sources/objects reading a large
// NDJSON file from a fileblob bucket against a plain buffered read of the
// same file (bufio.Scanner over os.File), in lines per second: rounds
// interleaved (the order alternates), medians reported.
//
//	go run ./objects                      # 1 GiB in /tmp, 3 rounds
//	go run ./objects -size 64MiB -rounds 5
//
// The file is generated once (lines of 20 to 180 bytes, some empty) and
// kept for later runs; -keep=false removes it at the end. The lane runs
// under driver.Run with one worker over memstore, MaxInFlight 1 and one
// split, so its figure includes planning, commits and shutdown; the
// report also gives the lane from its first record to the run's end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"
	"gocloud.dev/blob/fileblob"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/sources/objects"
	"github.com/spate-go/coordination/store/memstore"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "objects:", err)
		os.Exit(1)
	}
}

// run parses args, measures and prints the report to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("objects", flag.ContinueOnError)
	path := fs.String("file", filepath.Join(os.TempDir(), "spate-objects-bench.ndjson"), "the NDJSON file to read (generated when missing or smaller than -size)")
	sizeFlag := fs.String("size", "1GiB", "the file's size (KiB, MiB, GiB suffixes)")
	rounds := fs.Int("rounds", 3, "rounds of each reader, interleaved")
	keep := fs.Bool("keep", true, "keep the generated file for later runs")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the lane rounds to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	size, err := parseSize(*sizeFlag)
	if err != nil {
		return err
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: run at least one round", *rounds)
	}
	lines, err := ensureFile(*path, size)
	if err != nil {
		return err
	}
	if !*keep {
		defer os.Remove(*path)
	}
	fmt.Fprintf(out, "file: %s, %d bytes, %d lines\n", *path, size, lines)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var plainRates, laneRates, readRates []float64
	for r := range *rounds {
		order := []string{"plain", "lane"}
		if r%2 == 1 {
			order = []string{"lane", "plain"}
		}
		for _, which := range order {
			switch which {
			case "plain":
				n, took, err := plainRead(*path)
				if err != nil {
					return err
				}
				if n != lines {
					return fmt.Errorf("plain read counted %d lines, want %d", n, lines)
				}
				plainRates = append(plainRates, float64(n)/took.Seconds())
				fmt.Fprintf(out, "round %d plain: %d lines in %v (%.2fM lines/s)\n", r+1, n, took.Round(time.Millisecond), float64(n)/took.Seconds()/1e6)
			case "lane":
				n, took, read, err := laneRead(*path)
				if err != nil {
					return err
				}
				if n != lines {
					return fmt.Errorf("the lane delivered %d lines, want %d", n, lines)
				}
				laneRates = append(laneRates, float64(n)/took.Seconds())
				readRates = append(readRates, float64(n)/read.Seconds())
				fmt.Fprintf(out, "round %d lane:  %d lines in %v, from the first record %v (%.2fM lines/s; %.2fM from the first record)\n", r+1, n, took.Round(time.Millisecond), read.Round(time.Millisecond), float64(n)/took.Seconds()/1e6, float64(n)/read.Seconds()/1e6)
			}
		}
	}
	p, l, rd := median(plainRates), median(laneRates), median(readRates)
	fmt.Fprintf(out, "median plain: %.2fM lines/s\nmedian lane:  %.2fM lines/s (%.2fx plain)\nmedian lane from the first record: %.2fM lines/s (%.2fx plain)\n", p/1e6, l/1e6, l/p, rd/1e6, rd/p)
	return nil
}

// parseSize reads 123, 64KiB, 1MiB or 1GiB.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("-size %q: give a positive size such as 64MiB or 1GiB", s)
	}
	return n * mult, nil
}

// ensureFile generates path with size bytes of lines unless it has them
// already, and returns its line count.
func ensureFile(path string, size int64) (int64, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		n, _, err := plainRead(path)
		return n, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	r := rand.New(rand.NewPCG(1, 2))
	line := make([]byte, 0, 256)
	var n, lines int64
	for n < size {
		line = line[:0]
		if r.IntN(50) != 0 {
			line = strconv.AppendInt(append(line, `{"n":`...), lines, 10)
			line = append(line, `,"s":"`...)
			for range 8 + r.IntN(160) {
				line = append(line, byte('a'+r.IntN(26)))
			}
			line = append(line, `"}`...)
		}
		line = append(line, '\n')
		if int64(len(line)) > size-n {
			line = line[:size-n] // the last line may lose its newline
		}
		if _, err := w.Write(line); err != nil {
			f.Close()
			return 0, err
		}
		n += int64(len(line))
		lines++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return lines, f.Close()
}

// plainRead counts path's lines with a bufio.Scanner.
func plainRead(path string) (int64, time.Duration, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var n int64
	for sc.Scan() {
		n++
	}
	return n, time.Since(start), sc.Err()
}

// laneRead reads path as a one-split job of sources/objects under
// driver.Run and returns the lines delivered, the whole run's time and
// the time from the first record to the run's end.
func laneRead(path string) (int64, time.Duration, time.Duration, error) {
	ctx := context.Background()
	start := time.Now()
	b, err := fileblob.OpenBucket(filepath.Dir(path), nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer b.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, err
	}
	p, err := objects.NewPlanner(objects.PlannerConfig{Bucket: b, Name: "bench", Prefix: filepath.Base(path), SplitBytes: fi.Size() + 1})
	if err != nil {
		return 0, 0, 0, err
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "bench"
	cfg.MaxInFlight = 1 // one lane: no runtime cut finds an idle lane
	cfg.StartupGrace = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	st := memstore.New(cfg.LeaseDuration)
	defer st.Close()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return 0, 0, 0, err
	}
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		return 0, 0, 0, err
	}
	// One lane calls the function, on one goroutine; Run returns after it
	// ended (StopLanes waits for it), so plain variables do, as the plain
	// read's counter does.
	var n int64
	var first time.Time
	src := objects.NewSource(b, func(_ context.Context, r objects.Record) error {
		if n == 0 {
			first = time.Now()
		}
		n++
		return nil
	}, objects.Options{})
	err = driver.Run(ctx, c, src, driver.WithPlanner(p), driver.WithLogger(cfg.Logger))
	took := time.Since(start)
	return n, took, time.Since(first), err
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
