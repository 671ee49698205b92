package objects

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// metaVersion is the first byte of every split Meta this package writes.
const metaVersion = 1

// flagGzip marks the Meta of a split of one compressed object, read whole.
const flagGzip = 1

// maxKeyBytes bounds a pinned key (S3 and GCS allow 1024 bytes).
const maxKeyBytes = 4096

// pin is one object of a split as planned: its key and the version the
// plan saw.
type pin struct {
	key     string
	size    int64
	modTime time.Time // zero when the listing gave none
	md5     []byte    // nil when the listing gave none
}

// meta is a split's Meta: its objects in listing order and whether the
// split is one compressed object.
type meta struct {
	gzip    bool
	objects []pin
}

// encodeMeta returns m in the layout decodeMeta reads: version, flags,
// count, then per object its key, size, modification time (Unix
// nanoseconds, 0 for none) and MD5.
func encodeMeta(m meta) []byte {
	var flags byte
	if m.gzip {
		flags |= flagGzip
	}
	b := []byte{metaVersion, flags}
	b = binary.AppendUvarint(b, uint64(len(m.objects)))
	for _, o := range m.objects {
		b = binary.AppendUvarint(b, uint64(len(o.key)))
		b = append(b, o.key...)
		b = binary.AppendUvarint(b, uint64(o.size))
		var ns int64
		if !o.modTime.IsZero() {
			ns = o.modTime.UnixNano()
		}
		b = binary.AppendVarint(b, ns)
		b = binary.AppendUvarint(b, uint64(len(o.md5)))
		b = append(b, o.md5...)
	}
	return b
}

// decodeMeta reads a Meta encodeMeta wrote. Its work is bounded by len(b)
// whatever the bytes say.
func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) < 2 || b[0] != metaVersion {
		return m, fmt.Errorf("split meta is not an objects meta of version %d (was the job planned by objects.Planner?)", metaVersion)
	}
	m.gzip = b[1]&flagGzip != 0
	r := &metaReader{b: b[2:]}
	n := r.uvarint()
	if n == 0 || n > uint64(len(r.b)) {
		return m, fmt.Errorf("split meta lists %d objects in %d bytes", n, len(r.b))
	}
	var total int64
	for range n {
		var o pin
		kl := r.uvarint()
		if kl > maxKeyBytes {
			return m, fmt.Errorf("split meta holds a key of %d bytes (at most %d)", kl, maxKeyBytes)
		}
		o.key = string(r.bytes(kl))
		size := r.uvarint()
		if size > 1<<62 || total+int64(size) > 1<<62 {
			return m, fmt.Errorf("split meta's object %q is %d bytes; the objects of a split add up to at most 2^62", o.key, size)
		}
		o.size = int64(size)
		total += o.size
		if ns := r.varint(); ns != 0 {
			o.modTime = time.Unix(0, ns)
		}
		if ml := r.uvarint(); ml > 0 {
			if ml > 64 {
				return m, fmt.Errorf("split meta's object %q has an MD5 of %d bytes", o.key, ml)
			}
			o.md5 = bytes.Clone(r.bytes(ml))
		}
		if r.err {
			return m, fmt.Errorf("split meta is cut short")
		}
		m.objects = append(m.objects, o)
	}
	if len(r.b) != 0 || r.err {
		return m, fmt.Errorf("split meta has %d bytes past its objects", len(r.b))
	}
	if m.gzip && len(m.objects) != 1 {
		return m, fmt.Errorf("split meta of a compressed object lists %d objects", len(m.objects))
	}
	return m, nil
}

// total returns the bytes of m's objects: the end of its virtual space.
func (m meta) total() int64 {
	var t int64
	for _, o := range m.objects {
		t += o.size
	}
	return t
}

// metaReader reads varints and byte strings, remembering a short read.
type metaReader struct {
	b   []byte
	err bool
}

func (r *metaReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.err, r.b = true, nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
