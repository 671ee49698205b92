package actors_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/anthdm/hollywood/actor"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/actors"
	"github.com/spate-go/coordination/store/memstore"
)

// TestNilLoggerMeansSlogDefault: a coordinator whose Config.Logger is nil
// logs to slog.Default(), and Logger returns its logger with the instance
// on every record (the logger driver.Run uses by default). Not parallel: it
// replaces slog.Default().
func TestNilLoggerMeansSlogDefault(t *testing.T) {
	var out bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "w1"
	st := memstore.New(cfg.LeaseDuration)
	defer st.Close()
	c, err := actors.Spawn(e, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort()
	c.Logger().Warn("probe")
	if !strings.Contains(out.String(), `msg=probe instance=w1`) {
		t.Fatalf("slog.Default() got %q; want the probe naming instance w1", out.String())
	}
}
