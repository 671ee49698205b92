package examplekit

import (
	"io"
	"log/slog"
)

// levelNames lists the -log values.
const levelNames = "debug, info, warn, error or off"

// logLevels maps -log to a level; "off" discards.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "off": slog.LevelError + 100,
}

// Logger returns a text logger to w at the -log level (checked by
// [Common.Check]); "off" writes nothing.
func Logger(level string, w io.Writer) *slog.Logger {
	if level == "off" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: logLevels[level]}))
}
