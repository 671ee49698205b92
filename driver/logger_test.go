package driver_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/testkit"
)

// namedCoordinator is a scripted coordinator with an instance id, as a real
// coordinator has, but no logger of its own.
type namedCoordinator struct{ *testkit.ScriptedCoordinator }

func (namedCoordinator) InstanceID() string { return "w7" }

// quarantineWarning has the driver log its "split quarantined" warning and
// returns what reached the logger the test installed.
func quarantineWarning(t *testing.T, c coordination.Coordinator, script *testkit.CoordinatorScript, opts ...driver.Option) {
	t.Helper()
	d := driver.New(c, &rowSource{lanes: map[coordination.SplitID]*rowLane{}}, opts...)
	if err := d.Start(rowPlanner{}); err != nil {
		t.Fatal(err)
	}
	script.Quarantine("s1", 4)
	if _, err := d.PollEvents(0); err != nil {
		t.Fatal(err)
	}
}

// TestDriverLogsWhereTheUserLooks: with no WithLogger and a coordinator
// without a logger of its own, the driver's warnings reach slog.Default();
// WithLogger's logger gets them with the coordinator's instance. (The
// default of a real coordinator, its own logger, is checked by
// TestRunPausesIntakeWhileCommitsDoNotLand.) Not parallel: it replaces
// slog.Default().
func TestDriverLogsWhereTheUserLooks(t *testing.T) {
	var byDefault syncBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&byDefault, nil)))
	c, script := testkit.NewScripted()
	quarantineWarning(t, c, script)
	if !strings.Contains(byDefault.String(), `msg="split quarantined" split=s1`) {
		t.Fatalf("slog.Default() got %q; want the driver's quarantine warning", byDefault.String())
	}

	var given syncBuffer
	c, script = testkit.NewScripted()
	quarantineWarning(t, namedCoordinator{c}, script, driver.WithLogger(slog.New(slog.NewTextHandler(&given, nil))))
	if !strings.Contains(given.String(), `msg="split quarantined" instance=w7 split=s1`) {
		t.Fatalf("WithLogger's logger got %q; want the quarantine warning naming instance w7", given.String())
	}
}
