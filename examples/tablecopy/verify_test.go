package main

import (
	"testing"
)

// TestVerifyCatchesEveryDifference copies a table exactly, then damages the
// sink one way per row and checks that the verdict names the damage.
func TestVerifyCatchesEveryDifference(t *testing.T) {
	tests := []struct {
		name                      string
		damage                    string // SQL on the sink; "" leaves it intact
		missing, extra, differing int64
	}{
		{name: "equal"},
		{name: "row lost", damage: `DELETE FROM items_copy WHERE id = (SELECT min(id) FROM items_copy)`, missing: 1},
		{name: "row added", damage: `INSERT INTO items_copy (id, customer, amount_cents, currency, score, created_at) VALUES (-1, 'x', 1, 'EUR', 0, '')`, extra: 1},
		{name: "value changed", damage: `UPDATE items_copy SET amount_cents = amount_cents + 1 WHERE id = (SELECT max(id) FROM items_copy)`, differing: 1},
		{name: "null became empty", damage: `UPDATE items_copy SET note = '' WHERE id = (SELECT min(id) FROM items_copy WHERE note IS NULL)`, differing: 1},
		{name: "integer became text", damage: `UPDATE items_copy SET customer = 7 WHERE id = (SELECT max(id) FROM items_copy)`, differing: 1},
		{name: "values swapped between rows", damage: `UPDATE items_copy SET currency = CASE currency WHEN 'EUR' THEN 'USD' ELSE 'EUR' END WHERE id IN (SELECT id FROM items_copy WHERE currency IN ('EUR', 'USD') ORDER BY currency, id LIMIT 1) OR id IN (SELECT id FROM items_copy WHERE currency IN ('EUR', 'USD') ORDER BY currency DESC, id LIMIT 1)`, differing: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, tb := generatedTable(t, 300)
			if err := prepareSink(t.Context(), db, tb, true); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("INSERT INTO items_copy SELECT * FROM items"); err != nil {
				t.Fatal(err)
			}
			if tt.damage != "" {
				if _, err := db.Exec(tt.damage); err != nil {
					t.Fatal(err)
				}
			}
			v, err := verify(t.Context(), db, tb)
			if err != nil {
				t.Fatal(err)
			}
			if v.Source.Rows != 300 {
				t.Fatalf("source rows %d, want 300", v.Source.Rows)
			}
			if v.equal() != (tt.damage == "") {
				t.Fatalf("equal = %v for %q (source %s, sink %s)", v.equal(), tt.name, v.Source, v.Sink)
			}
			if v.Missing != tt.missing || v.Extra != tt.extra || v.Differing != tt.differing {
				t.Fatalf("missing %d, extra %d, differing %d; want %d, %d, %d", v.Missing, v.Extra, v.Differing, tt.missing, tt.extra, tt.differing)
			}
		})
	}
}
