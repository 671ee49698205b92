package actors

import (
	"encoding/binary"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
)

func splitID(s string) coordination.SplitID { return coordination.SplitID(s) }

// heartbeatInterval is LeaseDuration/3 × f_r with f_r in [0.8, 1.2) derived
// from (instance, nonce, round).
func heartbeatInterval(lease time.Duration, instance, nonce string, round uint64) time.Duration {
	return time.Duration(float64(lease/3) * jitter(instance, nonce, round))
}

// jitter returns f_r in [0.8, 1.2).
func jitter(instance, nonce string, round uint64) float64 {
	seed := protocol.H([]byte(instance + "\x00" + nonce))
	h := protocol.Hs(seed, binary.BigEndian.AppendUint64(nil, round))
	return 0.8 + 0.4*float64(h>>11)/float64(1<<53)
}
