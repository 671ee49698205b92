package driver

import (
	"log/slog"

	"github.com/spate-go/coordination"
)

// loggerFor returns the logger of a driver over c (see [WithLogger]): l with
// c's instance, else c's own logger, else slog.Default() with c's instance.
func loggerFor(c coordination.Coordinator, l *slog.Logger) *slog.Logger {
	if l == nil {
		if own, ok := c.(interface{ Logger() *slog.Logger }); ok && own.Logger() != nil {
			return own.Logger() // it carries the instance already
		}
		l = slog.Default()
	}
	if id, ok := c.(interface{ InstanceID() string }); ok {
		return l.With("instance", id.InstanceID())
	}
	return l
}
