package actors

// keyHolder is whose session a key this worker writes under its session
// nonce (its presence, the leader key) carries, as read after a lost
// compare or before a takeover.
type keyHolder int

// judgeHolder is the one rule that tells this session's own landed write
// from another session's (docs/protocol.md, "Sessions", "Leadership"):
// found and got are the read's result, nonce the session that wrote.
// What "another session" means is the caller's: a live twin for the
// presence key, a lost leadership for the leader key.
func judgeHolder(nonce string, found bool, got string) keyHolder {
	switch {
	case !found:
		return holderGone
	case got == nonce:
		return holderMine
	}
	return holderOther
}

const (
	holderGone  keyHolder = iota + 1 // the key is absent: the session it carried ended
	holderMine                       // this session's nonce: an earlier write of this session landed
	holderOther                      // another session's nonce: a twin (presence) or a new leader
)
