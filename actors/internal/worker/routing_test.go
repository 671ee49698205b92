package worker

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-go/coordination/internal/recordmsg"
	"github.com/spate-go/coordination/messages"
)

// TestRoutingTableMatchesArchitectureDoc checks that docs/architecture.md's
// routing table is the one declared in routing.go, row for row.
func TestRoutingTableMatchesArchitectureDoc(t *testing.T) {
	b, err := os.ReadFile("../../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Routing\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Routing" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var rows []string
	for line := range strings.SplitSeq(sec, "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	got, want := strings.Join(rows, "\n")+"\n", routingTable()
	if got != want {
		t.Errorf("docs/architecture.md's routing table differs from routes in routing.go; replace it with:\n%s\ngot:\n%s", want, got)
	}
}

// TestRoutesAreWellFormed checks every row names messages, a sender and a
// receiver, and that no message has two routes from one sender.
func TestRoutesAreWellFormed(t *testing.T) {
	seen := map[routeKey]bool{}
	for _, r := range routes {
		if len(r.Msgs) == 0 || len(r.To)+len(r.Own) == 0 {
			t.Errorf("route from %s: no messages or no receivers: %+v", r.From, r)
		}
		for _, ty := range r.Msgs {
			k := routeKey{r.From, ty}
			if seen[k] {
				t.Errorf("two routes for %s from %s", ty, r.From)
			}
			seen[k] = true
			if lookup(r.From, reflect.New(ty).Elem().Interface()) != routeIndex[k] {
				t.Errorf("lookup(%s, %s) does not find its row", r.From, ty)
			}
		}
		for _, to := range append(append([]Role(nil), r.To...), r.Own...) {
			if to == RoleHandle || to == r.From {
				t.Errorf("route of %v from %s goes to %s", r.Msgs, r.From, to)
			}
		}
	}
}

// TestLookupPanicsOnUnroutedMessage checks a send outside the table is
// refused loudly rather than lost.
func TestLookupPanicsOnUnroutedMessage(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("lookup of an unrouted message did not panic")
		}
	}()
	lookup(RoleAssign, recordmsg.RecordObserved{})
}

// TestRecipientsOwnKeyOnlyForThisWorker checks the own-key column: an
// assignment or presence observation reaches assign or lease only when it
// is about this worker.
func TestRecipientsOwnKeyOnlyForThisWorker(t *testing.T) {
	tests := []struct {
		name string
		msg  any
		want string
	}{
		{"peer assignment", recordmsg.AssignmentObserved{Instance: "w2"}, "leader"},
		{"own assignment", recordmsg.AssignmentObserved{Instance: "w1"}, "leader, assign"},
		{"own assignment deleted", messages.AssignmentDeleted{Instance: "w1"}, "leader, assign"},
		{"peer presence", messages.PresenceObserved{Instance: "w2"}, "leader, splitwriter"},
		{"own presence", messages.PresenceObserved{Instance: "w1"}, "leader, splitwriter, lease"},
		{"split records", recordmsg.RecordsObserved{}, "splitwriter, leader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := roleList(recipients(RoleWatch, tt.msg, "w1")); got != tt.want {
				t.Errorf("recipients = %s, want %s", got, tt.want)
			}
		})
	}
	// A surrender's outcome goes to the root only, which relays it after
	// the tenancy's TenancyEnded (docs/architecture.md, "One owner per fact").
	if got := roleList(recipients(RoleSplitWriter, messages.HandBackResolved{}, "w1")); got != "root" {
		t.Errorf("HandBackResolved from the split writer goes to %s, want root", got)
	}
	if got := roleList(recipients(RoleRoot, messages.HandBackResolved{}, "w1")); got != "revoke" {
		t.Errorf("HandBackResolved from the root goes to %s, want revoke", got)
	}
	// The assignment's diff reaches revoke before the split writer: the
	// tenancies the split writer starts from it then reach revoke after
	// the set that names them (else revoke, still holding the previous
	// set, would ask to revoke each of them).
	if got := roleList(recipients(RoleAssign, messages.AssignedSetChanged{}, "w1")); got != "revoke, splitwriter" {
		t.Errorf("AssignedSetChanged goes to %s, want revoke, splitwriter (in that order)", got)
	}
	// The table's own slices are never aliased by an append.
	recipients(RoleWatch, recordmsg.AssignmentObserved{Instance: "w1"}, "w1")
	if got := roleList(lookup(RoleWatch, recordmsg.AssignmentObserved{}).To); got != "leader" {
		t.Errorf("the route's to was modified: %s", got)
	}
}

// TestMessagesDocNamesEveryRoutedMessage keeps the messages package doc, the
// actor protocol in prose, in step with the table: it names every message
// the table routes.
func TestMessagesDocNamesEveryRoutedMessage(t *testing.T) {
	b, err := os.ReadFile("../../../messages/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		for _, ty := range r.Msgs {
			if ty.PkgPath() != reflect.TypeOf(messages.JobStarted{}).PkgPath() {
				continue // the actors' own messages (OpenCell, CommitRequest) are not messages'
			}
			if !strings.Contains(string(b), ty.Name()) {
				t.Errorf("messages/doc.go does not name %s (sent by %s)", ty.Name(), r.From)
			}
		}
	}
}
