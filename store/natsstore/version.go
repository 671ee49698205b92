package natsstore

import (
	"strconv"
	"strings"

	"github.com/spate-go/coordination"
)

// The lowest server version with per-message TTL and limit markers.
const (
	minMajor = 2
	minMinor = 11
)

// parseVersion reads the major and minor number of a server version
// leniently: the text before the first '-' or '+', split on '.', each part
// an integer or 0 when unparseable.
func parseVersion(v string) (major, minor int) {
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	num := func(i int) int {
		if i >= len(parts) {
			return 0
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	return num(0), num(1)
}

// versionSupported reports whether a server version is at least 2.11.
func versionSupported(v string) bool {
	major, minor := parseVersion(v)
	return major > minMajor || major == minMajor && minor >= minMinor
}

// checkVersion returns Fatal when the server version is below 2.11.
func checkVersion(v string) error {
	if versionSupported(v) {
		return nil
	}
	return coordination.Errorf(coordination.Fatal,
		"natsstore: server version %s is below the required 2.11 (needed for per-message TTL and limit markers); upgrade NATS", v)
}
