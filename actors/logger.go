package actors

import "log/slog"

// Logger returns the logger the coordinator writes to: Config.Logger (or
// slog.Default() when it was nil) with the worker's "instance" on every
// record. driver.Run and driver.New log there too unless given
// driver.WithLogger, so a worker's records all carry its instance.
func (c *Coordinator) Logger() *slog.Logger { return c.v.Log }
