package actors

import (
	"crypto/rand"
	"encoding/hex"
)

// randomHex returns 32 lowercase hex characters from crypto/rand.
func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
