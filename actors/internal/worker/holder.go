package worker

// KeyHolder is whose session a key this worker writes under its session
// nonce (its presence, the leader key) carries, as read after a lost
// compare or before a takeover.
type KeyHolder int

// JudgeHolder is the one rule that tells this session's own landed write
// from another session's (docs/protocol.md, "Sessions", "Leadership"):
// found and got are the read's result, nonce the session that wrote.
// What "another session" means is the caller's: a live twin for the
// presence key, a lost leadership for the leader key.
func JudgeHolder(nonce string, found bool, got string) KeyHolder {
	switch {
	case !found:
		return HolderGone
	case got == nonce:
		return HolderMine
	}
	return HolderOther
}

const (
	HolderGone  KeyHolder = iota + 1 // the key is absent: the session it carried ended
	HolderMine                       // this session's nonce: an earlier write of this session landed
	HolderOther                      // another session's nonce: a twin (presence) or a new leader
)
