package leader

import (
	"context"
	"testing"
)

func TestLeadEndsWithItsParent(t *testing.T) {
	var none *lead
	if !none.ended() {
		t.Fatal("no lead held must count as ended")
	}
	term := newLead(context.Background(), 4)
	work := term.child()
	if term.ended() || work.ended() || work.gen != 4 {
		t.Fatalf("fresh leads ended (%v, %v) or child generation %d, want live and 4", term.ended(), work.ended(), work.gen)
	}
	work.end()
	if term.ended() || !work.ended() {
		t.Fatal("ending the work lead must leave the term's lead live")
	}
	again := term.child()
	term.end()
	if !again.ended() || again.ctx.Err() == nil {
		t.Fatal("ending the term's lead must end every child and cancel its context")
	}
	term.end() // safe to call again
}
