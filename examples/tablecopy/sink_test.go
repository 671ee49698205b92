package main

import (
	"testing"
)

// TestSinkAbsorbsAReplayedPage writes a page, then the same page again (a
// replay after a crash): the second write inserts nothing, reports every row
// absorbed, and the split's watermark never goes back.
func TestSinkAbsorbsAReplayedPage(t *testing.T) {
	db, tb := generatedTable(t, 500)
	if err := prepareSink(t.Context(), db, tb, true); err != nil {
		t.Fatal(err)
	}
	s := newSink(db, tb, "w1")
	pg := newPager(db, tb, 100)
	keys, err := readKeyRange(t.Context(), db, tb)
	if err != nil {
		t.Fatal(err)
	}
	rows, next, err := pg.page(t.Context(), keys.min, keys.max+1)
	if err != nil || len(rows) != 100 {
		t.Fatalf("page = %d rows, %v; want 100", len(rows), err)
	}
	if absorbed, err := s.write(t.Context(), "ids-0", rows, next); err != nil || absorbed != 0 {
		t.Fatalf("first write: absorbed %d, %v; want 0", absorbed, err)
	}
	more, further, err := pg.page(t.Context(), next, keys.max+1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.write(t.Context(), "ids-0", more, further); err != nil {
		t.Fatal(err)
	}
	// The replay of the first page, by a successor that resumed at an older
	// coordinator watermark.
	if absorbed, err := s.write(t.Context(), "ids-0", rows, next); err != nil || absorbed != 100 {
		t.Fatalf("replayed write: absorbed %d, %v; want 100", absorbed, err)
	}
	if mark, ok, err := s.watermark(t.Context(), "ids-0"); err != nil || !ok || mark != further {
		t.Fatalf("watermark = %d, %v, %v; want %d (never lowered by the replay)", mark, ok, err, further)
	}
	if _, ok, err := s.watermark(t.Context(), "ids-1"); err != nil || ok {
		t.Fatalf("watermark of an unwritten split: ok %v, %v; want none", ok, err)
	}
	var inSink int64
	if err := db.QueryRow("SELECT count(*) FROM " + quote(sinkName(tb))).Scan(&inSink); err != nil || inSink != 200 {
		t.Fatalf("sink holds %d rows, %v; want 200", inSink, err)
	}
	var v verdict
	if err := readCounts(t.Context(), db, sinkName(tb), &v); err != nil {
		t.Fatal(err)
	}
	if v.Pages != 3 || v.Absorbed != 100 || v.Written["w1"] != 200 {
		t.Fatalf("counts: %d pages, %d absorbed, %v written; want 3, 100, w1:200", v.Pages, v.Absorbed, v.Written)
	}
}

// TestSinkWriteIsAllOrNothing fails a page midway (a row that violates a
// constraint) and checks that neither its rows nor its watermark landed.
func TestSinkWriteIsAllOrNothing(t *testing.T) {
	db, tb := generatedTable(t, 10)
	if err := prepareSink(t.Context(), db, tb, true); err != nil {
		t.Fatal(err)
	}
	s := newSink(db, tb, "w1")
	rows, next, err := newPager(db, tb, 10).page(t.Context(), 0, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	rows[len(rows)-1][1] = nil // customer is NOT NULL
	if _, err := s.write(t.Context(), "ids-0", rows, next); err == nil {
		t.Fatal("write of a page with a NULL customer succeeded")
	}
	var n int64
	if err := db.QueryRow("SELECT count(*) FROM " + quote(sinkName(tb))).Scan(&n); err != nil || n != 0 {
		t.Fatalf("sink holds %d rows after a failed page, %v; want 0", n, err)
	}
	if _, ok, err := s.watermark(t.Context(), "ids-0"); err != nil || ok {
		t.Fatalf("watermark after a failed page: ok %v, %v; want none", ok, err)
	}
}

func TestPrepareSinkResetsOnlyWhenAsked(t *testing.T) {
	db, tb := generatedTable(t, 10)
	if err := prepareSink(t.Context(), db, tb, true); err != nil {
		t.Fatal(err)
	}
	rows, next, err := newPager(db, tb, 10).page(t.Context(), 0, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newSink(db, tb, "w1").write(t.Context(), "ids-0", rows, next); err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + quote(sinkName(tb))).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := prepareSink(t.Context(), db, tb, false); err != nil || count() != 10 {
		t.Fatalf("prepareSink without reset: %v, %d rows left; want 10", err, count())
	}
	if err := prepareSink(t.Context(), db, tb, true); err != nil || count() != 0 {
		t.Fatalf("prepareSink with reset: %v, %d rows left; want 0", err, count())
	}
}
