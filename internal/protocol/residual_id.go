package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/spate-go/coordination"
)

// Residual ids of docs/protocol.md ("Runtime split", "Residual ids"): the id
// of the residual of cut counter made by tenancy epoch of a parent split is a
// pure function of the three, so every writer of one cut derives the same
// id and a retried write creates no second residual.
//
//   - short form "_<parent>_<epoch>_<counter>" (decimal, no leading zeros),
//     when it fits in coordination.SplitIDMaxLen bytes;
//   - long form "_<hash>_<epoch>_<counter>_h" otherwise, hash being the
//     first 16 bytes of SHA-256(parent) in lower-case hex: at most 77 bytes.

// residualHashLen is the length of the long form's parent hash, in hex digits.
const residualHashLen = 32

// residualLongSuffix ends every long-form residual id; a short-form id ends
// in a digit, so the two forms never meet.
const residualLongSuffix = "_h"

// ResidualID returns the id of the residual of cut counter (1, 2, ...) made
// by tenancy epoch (at least 1) of split parent. The result is a valid split
// id for every valid parent. It panics when epoch or counter is 0: no
// tenancy has epoch 0 and cuts are counted from 1, so either is a bug.
func ResidualID(parent coordination.SplitID, epoch, counter uint64) coordination.SplitID {
	if epoch == 0 || counter == 0 {
		panic("protocol: ResidualID needs an epoch and a counter of at least 1")
	}
	short := residualForm(string(parent), epoch, counter, "")
	if len(short) <= coordination.SplitIDMaxLen {
		return coordination.SplitID(short)
	}
	return coordination.SplitID(residualForm(parentHash(parent), epoch, counter, residualLongSuffix))
}

// residualForm spells "_<body>_<epoch>_<counter><suffix>".
func residualForm(body string, epoch, counter uint64, suffix string) string {
	b := make([]byte, 0, 1+len(body)+2+40+len(suffix))
	b = append(append(b, '_'), body...)
	b = strconv.AppendUint(append(b, '_'), epoch, 10)
	b = strconv.AppendUint(append(b, '_'), counter, 10)
	return string(append(b, suffix...))
}

// parentHash is the long form's stand-in for a parent id.
func parentHash(parent coordination.SplitID) string {
	sum := sha256.Sum256([]byte(parent))
	return hex.EncodeToString(sum[:residualHashLen/2])
}

// ResidualName is a residual id taken apart by [ParseResidualID].
type ResidualName struct {
	// Parent is the parent's id; "" in the long form, which keeps only its
	// hash (the residual's split record names the parent).
	Parent coordination.SplitID
	// ParentHash is the long form's parent hash (32 lower-case hex digits);
	// "" in the short form.
	ParentHash string
	// Epoch is the parent tenancy's epoch that made the cut; at least 1.
	Epoch uint64
	// Counter numbers the cut within that tenancy; at least 1.
	Counter uint64
}

// ParseResidualID takes id apart if it has residual form (either form of
// [ResidualID], with canonical decimals of at least 1), and reports whether
// it does. A planner's split id of residual form is reserved
// (docs/protocol.md, "Residual ids"). For a short-form id, ResidualID of
// the parts is id again.
func ParseResidualID(id coordination.SplitID) (ResidualName, bool) {
	s := string(id)
	if len(s) < 2 || s[0] != '_' || !isName(s) {
		return ResidualName{}, false
	}
	body, long := strings.CutSuffix(s[1:], residualLongSuffix)
	rest, counter, ok := cutDecimal(body)
	if !ok {
		return ResidualName{}, false
	}
	head, epoch, ok := cutDecimal(rest)
	if !ok || head == "" {
		return ResidualName{}, false
	}
	if !long {
		return ResidualName{Parent: coordination.SplitID(head), Epoch: epoch, Counter: counter}, true
	}
	if !isLowerHex(head, residualHashLen) {
		return ResidualName{}, false
	}
	return ResidualName{ParentHash: head, Epoch: epoch, Counter: counter}, true
}

// IsResidualOf reports whether id is the residual id of some cut of parent:
// [ResidualID](parent, epoch, counter) for the epoch and counter id names.
func IsResidualOf(id, parent coordination.SplitID) bool {
	n, ok := ParseResidualID(id)
	return ok && ResidualID(parent, n.Epoch, n.Counter) == id
}

// cutDecimal splits s at its last '_' into what precedes it and the
// canonical decimal (no leading zero, at least 1, within uint64) after it.
func cutDecimal(s string) (string, uint64, bool) {
	i := strings.LastIndexByte(s, '_')
	if i < 0 {
		return "", 0, false
	}
	d := s[i+1:]
	if d == "" || d[0] == '0' {
		return "", 0, false
	}
	v, err := strconv.ParseUint(d, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return s[:i], v, true
}

// isLowerHex reports whether s is n lower-case hex digits.
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
