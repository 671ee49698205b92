// Package protocol holds the pure, deterministic rules of the coordination
// protocol: the stable hash, record encoding and keys, claim candidates and the
// desired assignment. It does no I/O, reads no clock and knows no actors.
package protocol
