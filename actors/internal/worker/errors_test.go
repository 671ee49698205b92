package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

// TestErrorBuilders checks every builder's kind and that its reason names
// the subject and, where the caller can act, what to do.
func TestErrorBuilders(t *testing.T) {
	tests := []struct {
		name string
		err  error
		kind coordination.ErrorKind
		has  []string
	}{
		{"not held", NotHeld("a"), coordination.Fenced, []string{"split a", "not held", "nothing was written"}},
		{"epoch not held", EpochNotHeld("a", 3, 2), coordination.Fenced, []string{"split a", "epoch 3", "held: 2"}},
		{"fenced", FencedErr("a"), coordination.Fenced, []string{"split a", "another worker owns it"}},
		{"kept moving", keptMoving("committing split a"), coordination.Retryable, []string{"committing split a", "retry"}},
		{"hand-back unconfirmed", HandBackUnconfirmed([]coordination.SplitID{"a", "b"}), coordination.Retryable, []string{"[a b]", "handed back again later"}},
		{"twin", TwinError("w1"), coordination.Fatal, []string{`"w1"`, "unique InstanceID"}},
		{"spec missing", SpecMissing("a", "job.spec.a"), coordination.Fatal, []string{"split a", "job.spec.a", "deleted outside the library"}},
		{"no answer", NoAnswer(time.Second), coordination.Retryable, []string{"1s", "may still take effect"}},
		{"stopped", StoppedBeforeDone("fail"), coordination.Retryable, []string{"fail did not complete", "may still land"}},
		{"final unconfirmed", FinalUnconfirmed("a", time.Second), coordination.Retryable, []string{"split a", "1s"}},
		{"rolled back", StoreRolledBack(memstore.New(time.Second), store.Durable, "k", 3, 5), coordination.Fatal, []string{"key k", "revision 3", "revision 5", "make the store durable", "restore the job from scratch"}},
		{"plan missing", PlanMissing, coordination.Fatal, []string{"plan record is missing"}},
		{"halted", errHalted, coordination.Retryable, []string{"write not issued"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k := coordination.KindOf(tt.err); k != tt.kind {
				t.Fatalf("kind %v, want %v (%v)", k, tt.kind, tt.err)
			}
			for _, s := range tt.has {
				if !strings.Contains(tt.err.Error(), s) {
					t.Errorf("%q does not say %q", tt.err, s)
				}
			}
		})
	}
}

func TestStoreErrKeepsKindAndCause(t *testing.T) {
	fatal := &coordination.Error{Kind: coordination.Fatal, Reason: "corrupt"}
	plain := context.DeadlineExceeded
	tests := []struct {
		name   string
		err    error
		kind   coordination.ErrorKind
		reason string
	}{
		{"a coordination error keeps its kind", fatal, coordination.Fatal, "reading x: corrupt"},
		{"any other error is Retryable", plain, coordination.Retryable, "reading x: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StoreErr("reading x", tt.err)
			if coordination.KindOf(got) != tt.kind || ReasonOf(got) != tt.reason || !errors.Is(got, tt.err) {
				t.Fatalf("storeErr = %v (kind %v, reason %q)", got, coordination.KindOf(got), ReasonOf(got))
			}
		})
	}
	if got := ReasonOf(errors.New("plain")); got != "plain" {
		t.Fatalf("reasonOf(plain) = %q", got)
	}
}
