package protocol

import (
	"encoding/binary"
	"hash/fnv"
)

// H is the library's stable hash: 64-bit FNV-1a over b. It never changes
// across library versions.
func H(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// Hs is H seeded: H(be64(seed) ‖ b).
func Hs(seed uint64, b []byte) uint64 {
	h := fnv.New64a()
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], seed)
	h.Write(be[:])
	h.Write(b)
	return h.Sum64()
}

// Fingerprint returns fp = H(fingerprint), stamped into every spec and progress
// record and used as the seed of every assignment tie-break.
func Fingerprint(fingerprint string) uint64 { return H([]byte(fingerprint)) }

// MemberHash is the tie-break hash of an instance id under fp.
func MemberHash(fp uint64, member string) uint64 { return Hs(fp, []byte(member)) }

// SplitHash is the tie-break hash of a split id under fp.
func SplitHash(fp uint64, id string) uint64 { return Hs(fp, []byte(id)) }
