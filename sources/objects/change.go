package objects

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// noCut reports whether a split's Meta is a compressed object's, which is
// never cut ([lanes.Options.NoCut]).
func noCut(b []byte) bool { return len(b) >= 2 && b[0] == metaVersion && b[1]&flagGzip != 0 }

// changed compares the version a read sees with the pin and returns what
// differs ("" when nothing does). A modification time is compared to the
// second when either side has none finer (S3's Last-Modified header has
// whole seconds, its listing milliseconds).
func (p pin) changed(size int64, modTime time.Time, md5 []byte) string {
	var diffs []string
	if size != p.size {
		diffs = append(diffs, fmt.Sprintf("size %d -> %d bytes", p.size, size))
	}
	if !p.modTime.IsZero() && !modTime.IsZero() && !sameTime(p.modTime, modTime) {
		diffs = append(diffs, fmt.Sprintf("modified %s -> %s", p.modTime.UTC().Format(time.RFC3339Nano), modTime.UTC().Format(time.RFC3339Nano)))
	}
	if len(p.md5) > 0 && len(md5) > 0 && !bytes.Equal(p.md5, md5) {
		diffs = append(diffs, fmt.Sprintf("md5 %s -> %s", hex.EncodeToString(p.md5), hex.EncodeToString(md5)))
	}
	return strings.Join(diffs, ", ")
}

// sameTime reports a == b, to the second when either has no fraction.
func sameTime(a, b time.Time) bool {
	if a.Equal(b) {
		return true
	}
	if a.Nanosecond() == 0 || b.Nanosecond() == 0 {
		return a.Unix() == b.Unix()
	}
	return false
}
