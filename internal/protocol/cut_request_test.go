package protocol

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestLargestEstimatesProperties: at most EstimatesMax entries, the
// largest ones, each split once, none empty, in the order decoders accept.
func TestLargestEstimatesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := rapid.SliceOfN(genEstimate(), 0, 10).Draw(t, "estimates")
		out := LargestEstimates(in)
		if len(out) > EstimatesMax {
			t.Fatalf("%d estimates", len(out))
		}
		first := map[string]Estimate{}
		for _, e := range in {
			if _, ok := first[string(e.Split)]; !ok && e.Remaining > 0 {
				first[string(e.Split)] = e
			}
		}
		for i, e := range out {
			if f := first[string(e.Split)]; f != e {
				t.Fatalf("entry %+v is not the split's first non-empty estimate %+v", e, f)
			}
			if i > 0 && compareEstimates(out[i-1], e) >= 0 {
				t.Fatalf("not in order: %+v", out)
			}
		}
		for _, f := range first {
			if !slices.Contains(out, f) && len(out) < EstimatesMax {
				t.Fatalf("left out %+v with room to spare: %+v", f, out)
			}
			if !slices.Contains(out, f) && compareEstimates(f, out[len(out)-1]) < 0 {
				t.Fatalf("left out %+v, larger than %+v", f, out[len(out)-1])
			}
		}
		b := EncodePresence(PresenceRecord{Nonce: "n", Remaining: out})
		back, err := DecodePresence(WorkerKey("w1"), b)
		if err != nil || !slices.Equal(back.Remaining, out) {
			t.Fatalf("presence %s: %+v, %v", b, back.Remaining, err)
		}
	})
}

func TestDecodeEstimatesAndCutRequests(t *testing.T) {
	const notRecord = ": not a coordination record; something else is writing to this store namespace"
	presence := func(tail string) string { return `{"schema":1,"nonce":"n","max_in_flight":2` + tail + `}` }
	assign := func(tail string) string { return `{"schema":1,"generation":3,"splits":["a","b"]` + tail + `}` }
	e := func(split, epoch, remaining string) string {
		return `{"split":"` + split + `","epoch":` + epoch + `,"remaining":` + remaining + `}`
	}
	cp := func(split, epoch, counter, keep, parts string) string {
		return `{"split":"` + split + `","epoch":` + epoch + `,"counter":` + counter + `,"keep_ppm":` + keep + `,"parts":` + parts + `}`
	}
	c := func(split, epoch, counter, keep string) string { return cp(split, epoch, counter, keep, "1") }
	presDec := func(b []byte) error { _, err := DecodePresence(WorkerKey("w1"), b); return err }
	assignDec := func(b []byte) error { _, err := DecodeAssignment(AssignKey("w1"), b); return err }
	tests := []struct {
		name   string
		decode func([]byte) error
		in     string
		detail string // "" decodes
	}{
		{"presence without estimates", presDec, presence(``), ""},
		{"presence estimates", presDec, presence(`,"remaining":[` + e("b", "2", "90") + `,` + e("a", "1", "40") + `,` + e("c", "1", "40") + `]`), ""},
		{"empty estimates", presDec, presence(`,"remaining":[]`), "field remaining is empty"},
		{"null estimates", presDec, presence(`,"remaining":null`), "field remaining is not an array of objects"},
		{"estimates ascending", presDec, presence(`,"remaining":[` + e("a", "1", "40") + `,` + e("b", "2", "90") + `]`), "not in descending remaining work"},
		{"tie out of split order", presDec, presence(`,"remaining":[` + e("c", "1", "40") + `,` + e("a", "1", "40") + `]`), "not in descending remaining work"},
		{"one split twice", presDec, presence(`,"remaining":[` + e("a", "1", "90") + `,` + e("a", "1", "40") + `]`), "names a split twice"},
		{"five estimates", presDec, presence(`,"remaining":[` + e("a", "1", "5") + `,` + e("b", "1", "4") + `,` + e("c", "1", "3") + `,` + e("d", "1", "2") + `,` + e("e", "1", "1") + `]`), "more than 4 entries"},
		{"zero remaining", presDec, presence(`,"remaining":[` + e("a", "1", "0") + `]`), "epoch or remaining is 0"},
		{"zero epoch", presDec, presence(`,"remaining":[` + e("a", "0", "5") + `]`), "epoch or remaining is 0"},
		{"bad split id", presDec, presence(`,"remaining":[` + e("a.b", "1", "5") + `]`), "field remaining: field split may only contain"},
		{"estimate with an unknown field", presDec, presence(`,"remaining":[{"split":"a","epoch":1,"remaining":5,"x":0}]`), `field remaining: unknown field "x"`},
		{"estimate not an object", presDec, presence(`,"remaining":[1]`), "field remaining is not an object"},
		{"assignment without cuts", assignDec, assign(``), ""},
		{"assignment cuts", assignDec, assign(`,"cuts":[` + c("a", "2", "1", "500000") + `,` + c("b", "1", "3", "999999") + `]`), ""},
		{"empty cuts", assignDec, assign(`,"cuts":[]`), "field cuts is empty"},
		{"cut of an unassigned split", assignDec, assign(`,"cuts":[` + c("z", "2", "1", "500000") + `]`), "split is not in the assignment's splits"},
		{"cuts out of order", assignDec, assign(`,"cuts":[` + c("b", "2", "1", "500000") + `,` + c("a", "2", "1", "500000") + `]`), "strictly ascending split order"},
		{"one split cut twice", assignDec, assign(`,"cuts":[` + c("a", "2", "1", "500000") + `,` + c("a", "2", "2", "500000") + `]`), "strictly ascending split order"},
		{"keep below half", assignDec, assign(`,"cuts":[` + c("a", "2", "1", "499999") + `]`), "keep_ppm is outside"},
		{"keep all", assignDec, assign(`,"cuts":[` + c("a", "2", "1", "1000000") + `]`), "keep_ppm is outside"},
		{"counter 0", assignDec, assign(`,"cuts":[` + c("a", "2", "0", "500000") + `]`), "epoch or counter is 0"},
		{"cut missing a field", assignDec, assign(`,"cuts":[{"split":"a","epoch":2,"counter":1,"parts":1}]`), "field cuts: missing field keep_ppm"},
		{"a cut into three equal parts", assignDec, assign(`,"cuts":[` + cp("a", "2", "1", "250000", "3") + `]`), ""},
		{"the most parts", assignDec, assign(`,"cuts":[` + cp("a", "2", "1", "15385", "64") + `]`), ""},
		{"parts above the most (forged)", assignDec, assign(`,"cuts":[` + cp("a", "2", "1", "1000", "1000") + `]`), "parts is 1000, above the most a request asks for (64)"},
		{"parts 0", assignDec, assign(`,"cuts":[` + cp("a", "2", "1", "500000", "0") + `]`), "parts is 0"},
		{"several parts, unequal keep", assignDec, assign(`,"cuts":[` + cp("a", "2", "1", "500000", "3") + `]`), "not the equal share"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := WorkerKey("w1")
			if strings.HasPrefix(tc.in, `{"schema":1,"generation"`) {
				key = AssignKey("w1")
			}
			err := tc.decode([]byte(tc.in))
			if tc.detail == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.in, err)
				}
				return
			}
			wantFatal(t, err, key+notRecord)
			if cause := errors.Unwrap(err); cause == nil || !strings.Contains(cause.Error(), tc.detail) {
				t.Fatalf("cause %v, want one containing %q", cause, tc.detail)
			}
		})
	}
}

// TestPresenceAndAssignmentWithoutRuntimeSplit: without estimates and cut
// requests the values are exactly the earlier ones, so old workers read
// them (the golden files presence*.json and assignment*.json also hold).
func TestPresenceAndAssignmentWithoutRuntimeSplit(t *testing.T) {
	if got := string(EncodePresence(PresenceRecord{Nonce: "n", MaxInFlight: 2, Remaining: []Estimate{}})); got != `{"schema":1,"nonce":"n","max_in_flight":2}` {
		t.Fatalf("presence %s", got)
	}
	if got := string(EncodeAssignment(AssignmentRecord{Generation: 1, Splits: nil, Cuts: []CutRequest{}})); got != `{"schema":1,"generation":1,"splits":[]}` {
		t.Fatalf("assignment %s", got)
	}
}
