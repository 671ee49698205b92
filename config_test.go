package coordination

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestDefaultConfigValues(t *testing.T) {
	c := DefaultConfig()
	want := Config{
		LeaseDuration: 30 * time.Second, OpTimeout: 10 * time.Second, MaxAttempts: 4, MaxInFlight: 8,
		ReplanInterval: 60 * time.Second, ReconcileInterval: 30 * time.Second, StartupMaxAttempts: 8,
		RebalanceDelay: 20 * time.Second, StartupGrace: 3 * time.Second, DrainDeadline: 10 * time.Second,
		MinCutWeight: 1000,
	}
	if c != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
}

// TestValidateRules checks every rule V1-V14 with its exact reason.
func TestValidateRules(t *testing.T) {
	long := strings.Repeat("a", 129)
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		reason string
	}{
		{"V1 OpTimeout minimum", func(c *Config) { c.OpTimeout = 49 * time.Millisecond },
			"OpTimeout must be >= 50ms, got 49ms"},
		{"V2 LeaseDuration minimum", func(c *Config) { c.LeaseDuration = 299 * time.Millisecond; c.OpTimeout = 50 * time.Millisecond },
			"LeaseDuration must be >= 300ms, got 299ms"},
		{"V3 LeaseDuration against OpTimeout", func(c *Config) { c.LeaseDuration = 19 * time.Second },
			"LeaseDuration (19s) must be >= 2 x OpTimeout (10s) so that one slow store write cannot outlast the lease it is renewing"},
		{"V4 MaxAttempts", func(c *Config) { c.MaxAttempts = 0 },
			"MaxAttempts must be >= 1, got 0"},
		// 2 x OpTimeout overflowed for an OpTimeout of about 146 years, which
		// then passed with a 1s lease (DrainDeadline raised to pass V11).
		{"V3 without overflow", func(c *Config) {
			c.LeaseDuration, c.ReplanInterval = time.Second, time.Second
			c.OpTimeout, c.DrainDeadline = math.MaxInt64/2+1, math.MaxInt64
		}, "LeaseDuration (1s) must be >= 2 x OpTimeout (1281023h53m38.427387904s) so that one slow store write cannot outlast the lease it is renewing"},
		{"V5 MaxInFlight", func(c *Config) { c.MaxInFlight = -2 },
			"MaxInFlight must be 1..65536, got -2; a worker's assignment record names every split it holds and must fit the store's value cap"},
		// Unbounded, it was announced truncated to uint32 and could make the
		// leader's assignment record outgrow the value cap.
		{"V5 MaxInFlight above the limit", func(c *Config) { c.MaxInFlight = 1 << 32 },
			"MaxInFlight must be 1..65536, got 4294967296; a worker's assignment record names every split it holds and must fit the store's value cap"},
		{"V6 ReplanInterval", func(c *Config) { c.ReplanInterval = 29 * time.Second },
			"ReplanInterval (29s) must be >= LeaseDuration (30s); a shorter replan cadence only adds load"},
		{"V7 ReconcileInterval", func(c *Config) { c.ReconcileInterval = 19 * time.Second },
			"ReconcileInterval (19s) must be >= 2 x OpTimeout (10s): a listing must be able to finish before the next one starts"},
		{"V7 ReconcileInterval zero", func(c *Config) { c.ReconcileInterval = 0 },
			"ReconcileInterval (0s) must be >= 2 x OpTimeout (10s): a listing must be able to finish before the next one starts"},
		{"V8 InstanceID length", func(c *Config) { c.InstanceID = long },
			"InstanceID must be 1..128 bytes, got 129"},
		{"V9 InstanceID bytes", func(c *Config) { c.InstanceID = "pod.1" },
			`InstanceID may only contain [A-Za-z0-9_-], got '.' at byte 3 in "pod.1" (replace dots in pod names, for example with '-')`},
		{"V10 StartupMaxAttempts", func(c *Config) { c.StartupMaxAttempts = 0 },
			"StartupMaxAttempts must be >= 1, got 0"},
		{"V11 DrainDeadline", func(c *Config) { c.DrainDeadline = 9 * time.Second },
			"DrainDeadline (9s) must be >= OpTimeout (10s); otherwise no drain could commit its tail before being forced"},
		{"V12 RebalanceDelay", func(c *Config) { c.RebalanceDelay = -time.Second },
			"RebalanceDelay must be >= 0 (0 reassigns at once), got -1s"},
		{"V13 StartupGrace", func(c *Config) { c.StartupGrace = -time.Second },
			"StartupGrace must be >= 0 (0 disables the grace window), got -1s"},
		{"V14 MinCutWeight", func(c *Config) { c.MinCutWeight = 0 },
			"MinCutWeight must be >= 1 (the smallest residual a runtime split may cut off, in weight units), got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			var e *Error
			if !errors.As(err, &e) || e.Kind != Fatal {
				t.Fatalf("Validate() = %v, want a Fatal *Error", err)
			}
			if e.Reason != tc.reason {
				t.Fatalf("reason\n got: %s\nwant: %s", e.Reason, tc.reason)
			}
		})
	}
}

// TestValidateOrder checks that the first violated rule in V1..V12 order wins.
func TestValidateOrder(t *testing.T) {
	c := DefaultConfig()
	c.RebalanceDelay = -1 // V12
	c.MaxAttempts = 0     // V4
	c.OpTimeout = 0       // V1
	if err := c.Validate(); !strings.Contains(err.Error(), "OpTimeout must be >= 50ms") {
		t.Fatalf("V1 should be reported first, got %v", err)
	}
	c.OpTimeout = time.Second
	if err := c.Validate(); !strings.Contains(err.Error(), "MaxAttempts") {
		t.Fatalf("V4 should be reported before V12, got %v", err)
	}
}

func TestValidateAcceptsZeroValuedOptionalFields(t *testing.T) {
	c := DefaultConfig()
	c.RebalanceDelay = 0
	c.StartupGrace = 0
	c.InstanceID = ""
	c.DrainDeadline = time.Hour // may exceed LeaseDuration
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
	c.InstanceID = strings.Repeat("Z", 128)
	if err := c.Validate(); err != nil {
		t.Fatalf("a 128-byte InstanceID must pass, got %v", err)
	}
}

func TestValidateDoesNotMutate(t *testing.T) {
	c := DefaultConfig()
	c.MaxInFlight = 0
	before := c
	_ = c.Validate()
	if c != before {
		t.Fatal("Validate mutated the config")
	}
}

// The relation rules compare without overflow: V3 fails exactly when
// LeaseDuration < 2 x OpTimeout in exact arithmetic, for any durations.
func TestValidateRelationsDoNotOverflow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := DefaultConfig()
		c.OpTimeout = time.Duration(rapid.Int64Range(int64(50*time.Millisecond), math.MaxInt64).Draw(t, "op"))
		c.LeaseDuration = time.Duration(rapid.Int64Range(int64(300*time.Millisecond), math.MaxInt64).Draw(t, "lease"))
		c.ReplanInterval, c.ReconcileInterval, c.DrainDeadline = math.MaxInt64, math.MaxInt64, math.MaxInt64
		exact := new(big.Int).Mul(big.NewInt(2), big.NewInt(int64(c.OpTimeout)))
		want := big.NewInt(int64(c.LeaseDuration)).Cmp(exact) < 0
		err := c.Validate()
		if got := err != nil && strings.HasPrefix(err.(*Error).Reason, "LeaseDuration ("); got != want {
			t.Fatalf("OpTimeout %d, LeaseDuration %d: V3 failed = %v (%v), want %v", c.OpTimeout, c.LeaseDuration, got, err, want)
		}
	})
}

func TestEffectiveCutInterval(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct{ set, want time.Duration }{
		{0, 10 * time.Second}, {-time.Nanosecond, 0}, {time.Minute, time.Minute},
	} {
		c.CutInterval = tc.set
		if got := c.EffectiveCutInterval(); got != tc.want {
			t.Errorf("CutInterval %s: EffectiveCutInterval() = %s, want %s", tc.set, got, tc.want)
		}
	}
}
