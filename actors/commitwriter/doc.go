// Package commitwriter is the commit-writing actor of one worker: 16 shards
// by split, each the only writer of the progress records of its held
// tenancies (its progress cells), writing every commit by fenced CAS and
// telling the revoke actor and the split writer its outcome
// (docs/protocol.md, "Commits"; docs/architecture.md, "The commit path").
//
// A shard's inbox is an ordered mailbox (commitwriter.go) whose turn the
// shard's goroutine or an idle-time caller takes; the handle asks its
// commits through Writers.Ask, the actors post through worker.Env.Commits.
// It imports no other actor's package.
package commitwriter
