package testkit

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/protocol"
	"github.com/spate-go/coordination/store"
	"github.com/spate-go/coordination/store/memstore"
)

func TestRecorderFeedsEveryVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := memstore.New(time.Second, memstore.WithClock(clock.NewMock()))
		defer func() { _ = st.Close() }()
		const fingerprint = "job:v1"
		fp := protocol.Fingerprint(fingerprint)
		c := NewChecker()
		r, err := NewRecorder(ctx, st, fingerprint, c)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop()

		split := protocol.SeedSplit("a", fp, 1, nil, 0)
		srev, _, err := st.Create(ctx, store.Durable, protocol.SplitKey("a"), protocol.EncodeSplit(split))
		if err != nil {
			t.Fatal(err)
		}
		claim := split.Claim("w1", "n1", 1, false, 0)
		_, _, _ = st.Update(ctx, store.Durable, protocol.SplitKey("a"), protocol.EncodeSplit(claim), srev)
		fence := protocol.FreshProgress("a", fp, "w1", 1, 0)
		rev, _, _ := st.Create(ctx, store.Durable, protocol.ProgressKey("a"), protocol.EncodeProgress(fence))
		// A watermark that goes backwards is recorded and flagged (I1).
		c5 := fence.Commit(coordination.SplitProgress{Watermark: 5}, 0)
		rev, _, _ = st.Update(ctx, store.Durable, protocol.ProgressKey("a"), protocol.EncodeProgress(c5), rev)
		c3 := fence.Commit(coordination.SplitProgress{Watermark: 3}, 0)
		_, _, _ = st.Update(ctx, store.Durable, protocol.ProgressKey("a"), protocol.EncodeProgress(c3), rev)
		// Other keys are ignored; a foreign value is a violation.
		_, _, _ = st.Create(ctx, store.Durable, protocol.SpecKey("a"), []byte("x"))
		_, _, _ = st.Create(ctx, store.Durable, protocol.SplitKey("b"), []byte("not a record"))
		synctest.Wait()

		vs := c.Versions("a")
		if len(vs) != 5 || vs[1].Owner != "w1" || vs[1].Epoch != 1 || !vs[2].Progress || *vs[3].Watermark != 5 {
			t.Fatalf("versions = %v", vs)
		}
		v := c.Violations()
		if len(v) != 2 || !strings.HasPrefix(v[0], "I1: split a: watermark decreased") || !strings.Contains(v[1], "job.split.b rev") {
			t.Fatalf("violations = %q", v)
		}
		if !r.Synced() {
			t.Fatal("recorder not synced")
		}
	})
}
