package main

import (
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// generate writes n NDJSON files of about total bytes in all to dir, of
// uneven sizes: the first holds 30 % of the bytes, the rest share the other
// 70 % in sizes spread over two orders of magnitude; two of them are
// gzipped. Lines vary in length and some are empty.
func generate(dir string, n int, total int64) error {
	r := rand.New(rand.NewPCG(39, uint64(n)))
	weights := make([]float64, n-1)
	var sum float64
	for i := range weights {
		weights[i] = float64(1 + r.IntN(100))
		sum += weights[i]
	}
	for i := range n {
		size := total * 30 / 100
		if i > 0 {
			size = max(int64(float64(total*70/100)*weights[i-1]/sum), 1)
		}
		name := fmt.Sprintf("events-%03d.ndjson", i)
		if i == 1 || i == n/2 {
			name += ".gz"
		}
		if err := writeFile(filepath.Join(dir, "events", name), r, size); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes about size bytes of NDJSON lines to path, gzipped when
// its name ends in .gz.
func writeFile(path string, r *rand.Rand, size int64) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	var w interface {
		Write([]byte) (int, error)
	} = f
	var zw *gzip.Writer
	if filepath.Ext(path) == ".gz" {
		zw = gzip.NewWriter(f)
		w = zw
	}
	var line []byte
	for n, id := int64(0), 0; n < size; id++ {
		line = line[:0]
		if r.IntN(20) != 0 { // one line in twenty is empty
			line = fmt.Appendf(line, `{"id":%d,"user":"u%04d","event":"%s","pad":"`, id, r.IntN(10_000), events[r.IntN(len(events))])
			for range r.IntN(200) {
				line = append(line, byte('a'+r.IntN(26)))
			}
			line = append(line, `"}`...)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
		n += int64(len(line))
	}
	if zw != nil {
		return zw.Close()
	}
	return nil
}

// events are the generated lines' event names.
var events = []string{"click", "view", "purchase", "signup", "logout"}
