package natsstore

import (
	"strings"
	"testing"

	"github.com/spate-go/coordination"
)

func TestVersionFloor(t *testing.T) {
	tests := []struct {
		version      string
		major, minor int
		ok           bool
	}{
		{"2.11.0", 2, 11, true},
		{"2.11.4", 2, 11, true},
		{"2.12.0-beta.1", 2, 12, true},
		{"2.15.3", 2, 15, true},
		{"2.11.0+build.7", 2, 11, true},
		{"3.0.0", 3, 0, true},
		{"10.1", 10, 1, true},
		{"2.10.22", 2, 10, false},
		{"2.10.99-RC.1", 2, 10, false},
		{"2.9", 2, 9, false},
		{"2", 2, 0, false},
		{"1.99.0", 1, 99, false},
		{"garbage", 0, 0, false},
		{"", 0, 0, false},
		{"2.x.1", 2, 0, false},
		{"v2.11.0", 0, 11, false},
		{"-2.11", 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			major, minor := parseVersion(tc.version)
			if major != tc.major || minor != tc.minor {
				t.Fatalf("parseVersion(%q) = %d.%d, want %d.%d", tc.version, major, minor, tc.major, tc.minor)
			}
			err := checkVersion(tc.version)
			if tc.ok {
				if err != nil {
					t.Fatalf("checkVersion(%q) = %v, want nil", tc.version, err)
				}
				return
			}
			want := "natsstore: server version " + tc.version + " is below the required 2.11 (needed for per-message TTL and limit markers); upgrade NATS"
			if coordination.KindOf(err) != coordination.Fatal || !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("checkVersion(%q) = %v, want Fatal %q", tc.version, err, want)
			}
		})
	}
}
