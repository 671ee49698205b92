package coordctl

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
)

// job is one reading of a job's records (docs/protocol.md, "Keys").
type job struct {
	plan    protocol.PlanRecord
	fp      uint64
	splits  []splitEntry // by id
	assign  map[string]protocol.AssignmentRecord
	leader  *protocol.LeaderRecord
	workers map[string]protocol.PresenceRecord // live sessions, by instance
	// progress is set only when the reading asked for it.
	progress map[coordination.SplitID]protocol.ProgressRecord
}

// splitEntry is a split record with its revision.
type splitEntry struct {
	rec protocol.SplitRecord
	rev store.Revision
}

// readJob lists the job's placement records, its ephemeral keys and, when
// withProgress is set, its progress records.
func readJob(ctx context.Context, st store.Store, withProgress bool) (*job, error) {
	durable, err := st.List(ctx, store.Durable, protocol.PrefixJob)
	if err != nil {
		return nil, err
	}
	ephemeral, err := st.List(ctx, store.Ephemeral, "")
	if err != nil {
		return nil, err
	}
	var progress []store.Entry
	if withProgress {
		if progress, err = st.List(ctx, store.Durable, protocol.PrefixProgress); err != nil {
			return nil, err
		}
	}
	return parseJob(durable, ephemeral, progress)
}

// parseJob decodes listings of the job's keys. A job without a plan record
// is an error (no worker ever joined it); an unreadable plan, split or
// progress record is the codec's Fatal error naming the key. Unreadable
// presence values count as live workers with the default lane budget and
// unreadable assignments are skipped, as the workers themselves do.
func parseJob(durable, ephemeral, progress []store.Entry) (*job, error) {
	j := &job{assign: map[string]protocol.AssignmentRecord{}, workers: map[string]protocol.PresenceRecord{}}
	found := false
	for _, e := range durable {
		if e.Key == protocol.KeyPlan {
			p, err := protocol.DecodePlan(e.Key, e.Value)
			if err != nil {
				return nil, err
			}
			j.plan, j.fp, found = p, protocol.Fingerprint(p.Fingerprint), true
		}
	}
	if !found {
		return nil, fmt.Errorf("the job has no %s record: no worker has joined it yet", protocol.KeyPlan)
	}
	for _, e := range durable {
		switch kind, name := protocol.ParseKey(store.Durable, e.Key); kind {
		case protocol.KeySplitRecord:
			r, err := protocol.DecodeSplit(e.Key, e.Value, j.fp)
			if err != nil {
				return nil, err
			}
			j.splits = append(j.splits, splitEntry{rec: r, rev: e.Revision})
		case protocol.KeyAssignment:
			if a, err := protocol.DecodeAssignment(e.Key, e.Value); err == nil {
				j.assign[name] = a
			}
		}
	}
	slices.SortFunc(j.splits, func(a, b splitEntry) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	for _, e := range ephemeral {
		switch kind, name := protocol.ParseKey(store.Ephemeral, e.Key); kind {
		case protocol.KeyLeaderValue:
			if l, err := protocol.DecodeLeader(e.Key, e.Value); err == nil {
				j.leader = &l
			}
		case protocol.KeyPresence:
			p, _ := protocol.DecodePresence(e.Key, e.Value)
			j.workers[name] = p
		}
	}
	if progress != nil {
		j.progress = map[coordination.SplitID]protocol.ProgressRecord{}
		for _, e := range progress {
			if kind, _ := protocol.ParseKey(store.Durable, e.Key); kind != protocol.KeyProgress {
				continue
			}
			p, err := protocol.DecodeProgress(e.Key, e.Value, j.fp)
			if err != nil {
				return nil, err
			}
			j.progress[p.ID] = p
		}
	}
	return j, nil
}

// held reports whether r is owned by a live session: its owner's presence
// key exists with the record's nonce (docs/protocol.md, "Records",
// consequences).
func (j *job) held(r protocol.SplitRecord) bool {
	if r.Owner == "" || r.Status != protocol.StatusRunnable {
		return false
	}
	p, ok := j.workers[r.Owner]
	return ok && p.Nonce == r.Nonce
}
