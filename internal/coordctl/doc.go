// Package coordctl is the operator's tool for jobs coordinated through NATS
// or PostgreSQL (cmd/coordctl): status, watch, requeue, delete-job and audit. It lives
// here, not in the command, so that the examples can run an audit as their
// last step; [Run] is the whole command.
//
// It reads the records with the codecs of internal/protocol and writes only
// through the store's compare-and-swap (a requeue), so it is safe while
// workers run. It never prints secrets: passwords and tokens are read from
// files, and server URLs are printed through natsstore.RedactURL or
// pgstore.RedactDSN.
package coordctl
