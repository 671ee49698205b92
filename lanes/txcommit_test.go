package lanes

import (
	"context"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
)

// A key lane resumed at committed progress encodes that progress again
// before it acknowledged anything: the driver commits a runtime cut with
// the lane's last commit when Acked has not reported it yet (an
// exactly-once sink's lane resumed after a move, cut at once).
func TestEncodeCommitAtTheResumePoint(t *testing.T) {
	s := NewSource(func(ctx context.Context, lane *Lane[[]byte]) error { return nil }, Options{})
	spec, err := Split[[]byte]{ID: "a", Range: Range[[]byte]{Start: []byte("a"), End: []byte("z")}}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	resume := keys{}.progress(mark[[]byte]{last: []byte("m"), claimed: true, seq: 1}, Range[[]byte]{})
	if err := s.OpenSplit(driver.Opening{Split: spec, Resume: &resume, Epoch: 2, Waker: coordination.NewWaker()}); err != nil {
		t.Fatal(err)
	}
	p, err := s.EncodeCommit("a", resume.Watermark)
	if err != nil {
		t.Fatalf("EncodeCommit at the resume point: %v", err)
	}
	if p.Watermark != resume.Watermark || string(p.State) != string(resume.State) {
		t.Fatalf("EncodeCommit at the resume point = %+v, want %+v", p, resume)
	}
}
