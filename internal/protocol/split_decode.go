package protocol

import (
	"math"

	"github.com/spate-go/coordination"
)

// Every worker decodes every split record it watches, so DecodeSplit first
// tries decodeSplitCanonical, which reads the record in one pass when it
// is in the layout EncodeSplit writes and valid, and otherwise leaves it to
// the general decoder (decodeSplitFields), which also words every failure.

// decodeSplitCanonical decodes b, the split record stored at key, when it
// is in the layout EncodeSplit writes (no whitespace, the fields in order,
// strings of printable ASCII without escapes, integers without leading
// zeros) and passes every check of decodeSplitFields; it reports false
// otherwise. What it accepts, decodeSplitFields decodes to the same record
// (FuzzDecodeSplitCanonical). The record's ID is key's suffix, which the
// record's id equals, so it costs no allocation of its own.
func decodeSplitCanonical(key string, b []byte, fp uint64) (SplitRecord, bool) {
	c := canonicalReader{b: b, ok: true}
	var r SplitRecord
	c.field('{', "schema")
	schema := c.uint(math.MaxUint64)
	c.field(',', "id")
	id := c.str()
	c.field(',', "fp")
	r.FP = c.uint(math.MaxUint64)
	c.field(',', "weight")
	r.Weight = c.uint(math.MaxUint64)
	c.field(',', "epoch")
	r.Epoch = c.uint(math.MaxUint64)
	c.field(',', "status")
	st, ok := parseStatus(c.str())
	if !ok {
		return SplitRecord{}, false
	}
	r.Status = st
	c.field(',', "owner")
	owner, owned := c.nullName()
	c.field(',', "nonce")
	nonce, hasNonce := c.nullName()
	c.field(',', "attempts")
	r.Attempts = uint32(c.uint(math.MaxUint32))
	c.field(',', "written_at_ms")
	r.WrittenAtMs = c.int64()
	var parent string
	if c.ok && c.i < len(b) && b[c.i] == ',' {
		c.field(',', "parent")
		var ok bool
		if parent, ok = c.nullName(); !ok {
			return SplitRecord{}, false
		}
	}
	suffix := keySuffix(key, PrefixSplit)
	if !c.ok || c.i != len(b)-1 || b[c.i] != '}' || schema != Schema || string(id) != suffix || r.FP != fp ||
		r.Weight == 0 || r.Epoch == math.MaxUint64 || owned != hasNonce {
		return SplitRecord{}, false
	}
	r.ID = coordination.SplitID(suffix)
	r.Owner, r.Nonce = owner, nonce
	if parent != "" {
		r.Parent = coordination.SplitID(parent)
		if !IsResidualOf(r.ID, r.Parent) {
			return SplitRecord{}, false
		}
	}
	return r, true
}

// canonicalReader reads a record's fields in the layout encode.go writes
// (decodeSplitCanonical, and scanCanonical's field names); the first value
// it cannot read clears ok, and later reads return zero values.
type canonicalReader struct {
	b  []byte
	i  int
	ok bool
}

// field reads sep (',' or '{') and the quoted name with its colon.
func (c *canonicalReader) field(sep byte, name string) {
	j := c.i + len(name) + 4
	if !c.ok || j > len(c.b) || c.b[c.i] != sep || c.b[c.i+1] != '"' || string(c.b[c.i+2:j-2]) != name || c.b[j-2] != '"' || c.b[j-1] != ':' {
		c.ok = false
		return
	}
	c.i = j
}

// str reads a string of printable ASCII but quote and backslash
// (quotedEnd), and returns what is between its quotes.
func (c *canonicalReader) str() []byte {
	if !c.ok {
		return nil
	}
	end, ok := quotedEnd(c.b, c.i)
	if !ok {
		c.ok = false
		return nil
	}
	s := c.b[c.i+1 : end-1]
	c.i = end
	return s
}

// nullName reads null ("", false) or a valid name (isName) as a string
// (s, true).
func (c *canonicalReader) nullName() (string, bool) {
	if c.ok && len(c.b)-c.i >= 4 && string(c.b[c.i:c.i+4]) == "null" {
		c.i += 4
		return "", false
	}
	s := c.str()
	if !c.ok || !isName(s) {
		c.ok = false
		return "", false
	}
	return string(s), true
}

// uint reads a decimal integer without sign or leading zero, at most limit.
func (c *canonicalReader) uint(limit uint64) uint64 {
	if !c.ok {
		return 0
	}
	end := digits(c.b, c.i)
	raw := c.b[c.i:end]
	v, ok := parseUint(raw, limit)
	if !ok || len(raw) > 1 && raw[0] == '0' {
		c.ok = false
		return 0
	}
	c.i = end
	return v
}

// int64 reads a decimal integer, negative or not, without leading zero.
func (c *canonicalReader) int64() int64 {
	neg := c.ok && c.i < len(c.b) && c.b[c.i] == '-'
	if neg {
		c.i++
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	v := c.uint(limit)
	if neg {
		return int64(-v) // two's complement: -(1<<63) maps to MinInt64
	}
	return int64(v)
}
