package testkit

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

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

		seed := protocol.SeedProgress("a", fp, nil, 0)
		rev, _, err := st.Create(ctx, store.Durable, "split.a", protocol.EncodeProgress(seed))
		if err != nil {
			t.Fatal(err)
		}
		claim := seed.Claim("w1", 1, false, 0)
		rev, _, _ = st.Update(ctx, store.Durable, "split.a", protocol.EncodeProgress(claim), rev)
		// A watermark that goes backwards is recorded and flagged (I1).
		w5 := int64(5)
		c5 := claim
		c5.Watermark = &w5
		rev, _, _ = st.Update(ctx, store.Durable, "split.a", protocol.EncodeProgress(c5), rev)
		w3 := int64(3)
		c3 := claim
		c3.Watermark = &w3
		_, _, _ = st.Update(ctx, store.Durable, "split.a", protocol.EncodeProgress(c3), rev)
		// Other keys are ignored; a foreign value is a violation.
		_, _, _ = st.Create(ctx, store.Durable, "spec.a", []byte("x"))
		_, _, _ = st.Create(ctx, store.Durable, "split.b", []byte("not a record"))
		synctest.Wait()

		vs := c.Versions("a")
		if len(vs) != 4 || vs[1].Owner != "w1" || vs[1].Epoch != 1 || *vs[2].Watermark != 5 {
			t.Fatalf("versions = %v", vs)
		}
		v := c.Violations()
		if len(v) != 2 || !strings.HasPrefix(v[0], "I1: split a: watermark decreased") || !strings.Contains(v[1], "split.b rev") {
			t.Fatalf("violations = %q", v)
		}
		if !r.Synced() {
			t.Fatal("recorder not synced")
		}
	})
}
