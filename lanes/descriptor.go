package lanes

import (
	"encoding/binary"
	"fmt"
)

// descriptorVersion is the first byte of every descriptor and key progress
// state the kit writes; a later layout takes a new version.
const descriptorVersion = 1

// Range is a half-open range of positions [Start, End). For keys an empty
// End means the range runs to the end of the key space.
type Range[P Position] struct {
	// Start is the first position of the range.
	Start P
	// End is one past the range's last position.
	End P
}

// descriptor is what a split's descriptor holds: its kind, range, weight
// and the user's opaque bytes.
type descriptor[P Position] struct {
	rng    Range[P]
	weight uint64 // the range's whole weight, in the planner's units
	meta   []byte // the user's descriptor, carried verbatim
}

// encodeDescriptor returns d in the kit's layout: version, kind, weight,
// start, end, meta.
func encodeDescriptor[P Position](k kind[P], d descriptor[P]) []byte {
	b := []byte{descriptorVersion, k.code()}
	b = binary.AppendUvarint(b, d.weight)
	b = k.appendPos(b, d.rng.Start)
	b = k.appendPos(b, d.rng.End)
	b = binary.AppendUvarint(b, uint64(len(d.meta)))
	return append(b, d.meta...)
}

// decodeDescriptor reads a descriptor encodeDescriptor wrote.
func decodeDescriptor[P Position](k kind[P], b []byte) (descriptor[P], error) {
	var d descriptor[P]
	if len(b) < 2 || b[0] != descriptorVersion {
		return d, fmt.Errorf("descriptor is not a lanes descriptor of version %d (was the job planned by lanes.Planner?)", descriptorVersion)
	}
	if b[1] != k.code() {
		return d, fmt.Errorf("descriptor is of another position kind (code %d); this source reads %s ranges", b[1], k.name())
	}
	w, n := binary.Uvarint(b[2:])
	if n <= 0 {
		return d, fmt.Errorf("descriptor's weight is cut short")
	}
	d.weight = w
	rest := b[2+n:]
	var ok bool
	if d.rng.Start, rest, ok = k.readPos(rest); !ok {
		return d, fmt.Errorf("descriptor's start %s is cut short", k.name())
	}
	if d.rng.End, rest, ok = k.readPos(rest); !ok {
		return d, fmt.Errorf("descriptor's end %s is cut short", k.name())
	}
	m, n := binary.Uvarint(rest)
	if n <= 0 || m != uint64(len(rest)-n) {
		return d, fmt.Errorf("descriptor's user bytes are %d long, the descriptor says %d", len(rest)-max(n, 0), m)
	}
	if m > 0 {
		d.meta = append([]byte(nil), rest[n:]...)
	}
	if !k.beforeEnd(d.rng.Start, d.rng.End) {
		return d, fmt.Errorf("descriptor's range is empty or reversed (start %v, end %v)", d.rng.Start, d.rng.End)
	}
	return d, nil
}

// mark is a point in a lane's reading: everything claimed up to last (when
// claimed) is behind it; done says the whole range is. seq counts the marks
// of a split, and is a key lane's watermark.
type mark[P Position] struct {
	last    P     // the last claimed position; meaningful when claimed
	claimed bool  // something was claimed in the split's range
	done    bool  // the range is fully read
	seq     int64 // marks since the split began; a key lane's watermark
}

// copyInto returns m stored in dst's memory.
func (m mark[P]) copyInto(k kind[P], dst mark[P]) mark[P] {
	m.last = k.assign(dst.last, m.last)
	return m
}

// Progress state flags of a key lane.
const (
	stateClaimed = 1 << iota
	stateDone
)

// encodeState returns a key lane's resume state for m (offset lanes keep
// none: their watermark is the position).
func encodeState[P Position](k kind[P], m mark[P]) []byte {
	var flags byte
	if m.claimed {
		flags |= stateClaimed
	}
	if m.done {
		flags |= stateDone
	}
	return k.appendPos([]byte{descriptorVersion, flags}, m.last)
}

// decodeState reads a key lane's resume state at watermark w.
func decodeState[P Position](k kind[P], state []byte, w int64) (mark[P], error) {
	m := mark[P]{seq: w}
	if len(state) == 0 {
		if w != 0 {
			return m, fmt.Errorf("progress at watermark %d carries no resume state; a %s lane needs its last key", w, k.name())
		}
		return m, nil
	}
	if len(state) < 2 || state[0] != descriptorVersion {
		return m, fmt.Errorf("resume state is not a lanes state of version %d", descriptorVersion)
	}
	m.claimed, m.done = state[1]&stateClaimed != 0, state[1]&stateDone != 0
	last, rest, ok := k.readPos(state[2:])
	if !ok || len(rest) != 0 {
		return m, fmt.Errorf("resume state's last %s is malformed", k.name())
	}
	m.last = last
	return m, nil
}
