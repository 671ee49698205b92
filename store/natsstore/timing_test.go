package natsstore

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestTimingFor(t *testing.T) {
	tests := []struct {
		lease, wait, ping, step, hold time.Duration
	}{
		{2 * time.Second, 100 * time.Millisecond, 10 * time.Second, 666666666, time.Second},
		{3 * time.Second, 150 * time.Millisecond, 10 * time.Second, time.Second, 1500 * time.Millisecond},
		{30 * time.Second, 1500 * time.Millisecond, 10 * time.Second, 10 * time.Second, 15 * time.Second},
		{5 * time.Minute, 2 * time.Second, 100 * time.Second, 100 * time.Second, 150 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.lease.String(), func(t *testing.T) {
			got := timingFor(tc.lease)
			want := connTiming{reconnectWait: tc.wait, reconnectJitter: tc.wait, pingInterval: tc.ping, stepLimit: tc.step, holdLimit: tc.hold}
			if got != want {
				t.Fatalf("timingFor(%s) = %+v, want %+v", tc.lease, got, want)
			}
		})
	}
}

func TestTimingForProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lease := time.Duration(rapid.Int64Range(int64(MinLeaseTTL), int64(24*time.Hour)).Draw(t, "lease"))
		c := timingFor(lease)
		// The slowest reconnect after a server returns is well under the
		// LeaseDuration/3 between two renewals.
		if worst := c.reconnectWait + c.reconnectJitter; c.reconnectWait <= 0 || worst > lease/10 {
			t.Fatalf("lease %s: reconnect wait %s + jitter %s, want positive and at most lease/10", lease, c.reconnectWait, c.reconnectJitter)
		}
		// A held operation never outlasts the longest OpTimeout the
		// coordinator allows (LeaseDuration/2).
		if c.holdLimit <= 0 || c.holdLimit > lease/2 {
			t.Fatalf("lease %s: hold limit %s, want in (0, lease/2]", lease, c.holdLimit)
		}
		if c.stepLimit <= 0 || c.stepLimit > lease/3 {
			t.Fatalf("lease %s: step limit %s, want in (0, lease/3]", lease, c.stepLimit)
		}
		if c.pingInterval < minPingInterval || c.pingInterval > max(lease/3, minPingInterval) {
			t.Fatalf("lease %s: ping interval %s", lease, c.pingInterval)
		}
	})
}
