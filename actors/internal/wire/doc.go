// Package wire is the actor protocol of one coordinator worker: the
// typed messages its actors (see the actors package) send one another, and
// who sends what to whom. Each actor names, where it sends, the actors it
// tells, and beside each case of its receive switch, who sends it; the
// graph is read out of those sends into docs/architecture.md ("Routing",
// checked by the actors package's tests); this doc is its reading guide. The messages that carry a store
// record itself (RecordsObserved, LeaderObserved, PlanObserved,
// AssignmentObserved, ClaimWon) are the module's internal recordmsg package:
// every type here has fields any program can build and read.
//
// # What a user's actor sends
//
// The commands a user's actor may send the coordinator, and their replies,
// are the public messages package (FailSplit, ReleaseSplits,
// DeclineRevoke); the handle sends the same ones. Everything here is the
// actors' own: a user has no business sending it, and being under
// actors/internal no user's package can import it.
//
// # Who sends what to whom
//
// The handle (the caller's goroutine) asks the root with StartJob,
// DepartJob and the public FailSplit and ReleaseSplits, and the revoke
// actor with the public DeclineRevoke; each is answered by its Reply. Its commits go to the
// commit writer, which after each one tells the revoke actor CommitLanded,
// and asks the root EndTenancy when the commit was fenced or completed.
//
// The root owns the tenancy registry. It tells watch, leader, splitwriter
// and lease JobStarted, and leader, splitwriter and lease Departing; it
// announces each registry change once: TenancyStarted to splitwriter;
// TenancyEnded to revoke and the commit writer, then SurrenderTenancies to
// splitwriter, which carries the ends with the write each calls for (the
// completion, the failure of a Fail, the hand-back of a Release, Depart or
// forced revocation; answered by SurrenderTenanciesReply for Depart, or by
// the public FailSplitReply and ReleaseSplitsReply at the command's reply
// PID). It tells revoke the held tenancies to follow (FollowAssignment)
// whenever a tenancy starts or the assigned set (AssignedSetChanged, from
// assign) or the watches (WatchesChanged) change; it
// rebroadcasts VerdictReached to the leader; it forwards a user's actor's DeclineRevoke to the revoke actor;
// and during Depart it asks the leader StepDown and the lease
// WithdrawPresence.
//
// The watch actor turns watched and listed keys into observations:
// RecordsObserved and RecordDeleted (split records) to splitwriter and
// leader; PresenceObserved to leader and splitwriter, and to the lease for
// its own key; PresenceChallenged to the lease, for its own key only;
// PresenceDeleted to leader and splitwriter; LeaderObserved and
// LeaderDeleted to the leader; PlanObserved to leader and splitwriter;
// PlanDeleted to the leader; AssignmentObserved and AssignmentDeleted to the leader, and to
// assign for this worker's own record; WatchesChanged to leader,
// splitwriter and the root; Reconciled to the leader.
//
// The lease actor owns the session: Joined to watch, leader and
// splitwriter once startup finished; HeartbeatTicked to leader, revoke and splitwriter;
// SessionEnded to root, leader and splitwriter; SessionStarted, with the
// new session's nonce, to root, leader and splitwriter (each keeps the
// nonce it was last told; the lease owns it).
//
// The assign actor diffs this worker's assignment record and tells the
// diff, AssignedSetChanged, to the root (which tells revoke the held
// tenancies to follow) and to the split-writer actor (which claims what
// was added).
//
// The split-writer actor decides claims on its own view of the split
// records and writes them; it tells the root ClaimWon (which starts the
// tenancy); asks the root EndTenancy when a split record shows a held
// tenancy fenced; tells revoke HandBackResolved once a surrendered
// tenancy's write resolved (the root asked the write after it told revoke
// the tenancy's TenancyEnded, so it arrives after it); tells the root
// SplitQuarantined and VerdictReached.
//
// The revoke actor keeps only the drains in progress. It asks the root RevocationRequested (emit RevokeRequested)
// and ForceRevocation (surrender and hand back; for a DeclineRevoke it
// carries the caller's ReplyTo and the root answers DeclineRevokeReply).
//
// # Rules
//
// Messages are plain values, sent and matched as values: slices are copied
// by the sender and no message carries a pointer to actor state. Naming
// follows one scheme: intents are imperative (EndTenancy, FailSplit),
// facts are past participles (TenancyEnded), replies are the intent's name
// plus Reply and carry Err, and timer ticks end in Due (HeartbeatDue).
// Fields use this package's and the public packages' types; epochs here
// are bare uint64 (the public commands carry coordination.LeaseEpoch).
//
// The package has no behaviour and promises nothing beyond the field docs.
package wire
