package worker

import (
	"crypto/rand"
	"encoding/hex"
)

// RandomHex returns 32 lowercase hex characters from crypto/rand.
func RandomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
