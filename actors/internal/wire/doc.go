// Package wire is the actor protocol of one coordinator worker: the
// typed messages its actors (see the actors package) send one another, and
// who sends what to whom. Each actor names, where it sends, the actors it
// tells, and beside each case of its receive switch, who sends it; the
// graph is read out of those sends into docs/architecture.md ("Routing",
// checked by the actors package's tests); this doc is its reading guide. The messages that carry a store
// record itself (RecordsChanged, LeaderChanged, PlanChanged,
// AssignmentChanged) are the module's internal recordmsg package:
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
// The handle (the caller's goroutine) tells the lease StartJob, asks the
// root with DepartJob and the public FailSplit and ReleaseSplits, the
// revoke actor with the public DeclineRevoke, and tells the split writer
// RemainingReported; each request is answered by its Reply. Its commits go
// to the commit writer, which after each one tells the revoke actor
// CommitLanded, and asks the split writer EndTenancy when the commit was
// fenced or completed.
//
// The root is the outbox's one writer. It tells the leader Retire once it
// emitted the verdict or Depart began, and the lease Departing; it sends
// the commands naming tenancies on to the split writer, which owns the
// tenancy registry (FailSplit, ReleaseSplits, a user's actor's Subscribe,
// and DepartJob, answered by DepartHandedBack, or after a failure by
// DepartJobReply to the handle); it forwards a user's actor's DeclineRevoke to the revoke actor;
// and during Depart it asks the leader StepDown and the lease
// WithdrawPresence.
//
// The watch actor turns watched and listed keys into observations, one
// message per key family, each carrying a put or a deletion (Deleted), as
// a watch event does: RecordsChanged (split records: runs of puts, a
// deletion alone) to splitwriter and leader; PresenceChanged, with every
// live member after the change (the watch owns them), to leader and
// splitwriter, and a put of its own key to the lease too;
// PresenceChallenged to the lease, for its own key only; LeaderChanged to
// the leader; PlanChanged to leader and splitwriter, a deletion to the
// leader only; AssignmentChanged to the leader, and to the split writer
// for this worker's own record; WatchesChanged to leader and splitwriter;
// Reconciled to the leader.
//
// The lease actor owns the session and joins the job StartJob names:
// SessionChanged to leader and splitwriter when a session started, with
// its nonce and the job (each keeps the nonce it was last told; the lease
// owns it), the first once startup finished, to the watch too (the
// watches open), or when the session ended (the split writer ends every
// held tenancy); HeartbeatTicked to leader and splitwriter.
//
// The split-writer actor, the assignment-diffing actor, follows this
// worker's assignment record (the watch's AssignmentChanged) and diffs it.
// It decides claims on its own view of the split records, writes them and
// owns the tenancy registry: a claim it won starts a tenancy in the same
// step. It raises the root, in one ordered stream of
// EventsRaised, the seam events of what it applies: at a start (after
// posting the commit writer CellChanged, the cell opens) the Gained, then
// it tells revoke FollowAssignment (also whenever the assigned set or the
// watches change); at an end (a fence it sees, a command, a forced
// revocation, the session's end, a commit writer's EndTenancy) it tells
// revoke TenancyEnded, the commit writer CellChanged (the cell closes), the
// lease a 0 RemainingReported, raises the Lost of an involuntary end (with
// a decline's reply PID), and asks the end's write; it tells revoke
// HandBackResolved once that write resolved (after the TenancyEnded it sent
// first). It raises a revocation revoke requested (RevocationChanged) as
// RevokeRequested while the tenancy is held, and surrenders one revoke
// forced; it raises a quarantine its view shows and the verdict; answers a
// Subscribe the root sent on with BeginSubscription, tells the root
// HealthChanged, and passes a held tenancy's estimate on to the lease.
//
// The revoke actor keeps only the drains in progress and its deadline
// timer. It tells the split writer each change of a revocation the split
// writer acts on, RevocationChanged: requested (raised as RevokeRequested)
// or forced (surrender and hand back; for a DeclineRevoke it carries the
// caller's ReplyTo, answered by the root once the Lost is queued).
//
// # Rules
//
// Messages are plain values, sent and matched as values: slices are copied
// by the sender and no message carries a pointer to actor state. Naming
// follows one scheme: intents are imperative (EndTenancy, FailSplit),
// facts are past participles (TenancyEnded), replies are the intent's name
// plus Reply and carry Err, and timer ticks end in Due (HeartbeatDue). A
// fact that changes both ways is one message of its change, not a type per
// direction: a watched key's put or deletion (PresenceChanged, Deleted set
// for a deletion), as one store watch event is either, the session's end
// or start (SessionChanged), a revocation requested or forced
// (RevocationChanged).
// Fields use this package's and the public packages' types; epochs here
// are bare uint64 (the public commands carry coordination.LeaseEpoch).
//
// The package has no behaviour and promises nothing beyond the field docs.
package wire
