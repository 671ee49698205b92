package sqlscan_test

import (
	"os"
	"testing"

	"github.com/spate-go/coordination/internal/pgtest"
)

// srv is the package's shared server; nil when no server binaries exist.
var srv *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &srv)) }
