package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
)

// Native fuzz targets for every decoder of store bytes. Corrupt input must
// yield a Fatal *coordination.Error; anything accepted must be a record that
// re-encodes and decodes to itself, with a byte-stable encoding. Seed corpora
// live in testdata/fuzz/<FuzzName>/; the golden encodings are added too.

// addGoldenSeeds adds every golden encoding whose name starts with prefix.
func addGoldenSeeds(f *testing.F, prefix string) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", prefix+"*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden seeds for %q: %v", prefix, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.TrimSuffix(b, []byte("\n")))
	}
}

// checkFuzzDecode checks one decoder outcome: a Fatal error, or a record that
// survives a re-encoding.
func checkFuzzDecode[R any](t *testing.T, in []byte, r R, err error, enc func(R) []byte, dec func([]byte) (R, error)) {
	t.Helper()
	if err != nil {
		var ce *coordination.Error
		if !errors.As(err, &ce) || ce.Kind != coordination.Fatal {
			t.Fatalf("decode %q: got %v (%T), want a Fatal *coordination.Error", in, err, err)
		}
		if ce.Reason == "" || strings.HasSuffix(ce.Reason, ".") {
			t.Fatalf("decode %q: malformed reason %q", in, ce.Reason)
		}
		return
	}
	if !json.Valid(in) {
		t.Fatalf("accepted %q, which encoding/json rejects", in)
	}
	b := enc(r)
	back, err := dec(b)
	if err != nil {
		t.Fatalf("accepted %q as %#v, but its encoding %q does not decode: %v", in, r, b, err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("accepted %q as %#v, re-decoded as %#v", in, r, back)
	}
	if again := enc(back); !bytes.Equal(again, b) {
		t.Fatalf("encoding not stable: %q then %q", b, again)
	}
}

func FuzzDecodePlan(f *testing.F) {
	addGoldenSeeds(f, "plan")
	dec := func(b []byte) (PlanRecord, error) { return DecodePlan(KeyPlan, b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && r.Fingerprint == "" {
			t.Fatalf("accepted an empty fingerprint: %q", b)
		}
		checkFuzzDecode(t, b, r, err, EncodePlan, dec)
	})
}

func FuzzDecodeSpec(f *testing.F) {
	addGoldenSeeds(f, "spec")
	dec := func(b []byte) (SpecRecord, error) { return DecodeSpec(SpecKey("s0"), b, testFP) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && (r.ID != "s0" || r.FP != testFP || r.Weight == 0 || r.Descriptor == nil) {
			t.Fatalf("accepted an invalid spec %#v from %q", r, b)
		}
		checkFuzzDecode(t, b, r, err, EncodeSpec, dec)
	})
}

func FuzzDecodeSplit(f *testing.F) {
	addGoldenSeeds(f, "split")
	dec := func(b []byte) (SplitRecord, error) { return DecodeSplit(SplitKey("s0"), b, testFP) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && (r.ID != "s0" || r.FP != testFP || r.Status.String() == "unknown" || (r.Owner == "") != (r.Nonce == "") ||
			r.Owner != "" && (!isName(r.Owner) || !isName(r.Nonce)) || r.Epoch == math.MaxUint64) {
			t.Fatalf("accepted an invalid split record %#v from %q", r, b)
		}
		checkFuzzDecode(t, b, r, err, EncodeSplit, dec)
	})
}

func FuzzDecodeProgress(f *testing.F) {
	addGoldenSeeds(f, "progress")
	dec := func(b []byte) (ProgressRecord, error) { return DecodeProgress(ProgressKey("s0"), b, testFP) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && (r.ID != "s0" || r.FP != testFP || r.Owner != "" && !isName(r.Owner) || r.Epoch == math.MaxUint64) {
			t.Fatalf("accepted an invalid progress record %#v from %q", r, b)
		}
		checkFuzzDecode(t, b, r, err, EncodeProgress, dec)
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	addGoldenSeeds(f, "assignment")
	dec := func(b []byte) (AssignmentRecord, error) { return DecodeAssignment(AssignKey("w1"), b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil {
			for i, id := range r.Splits {
				if !isName(string(id)) || i > 0 && r.Splits[i-1] >= id {
					t.Fatalf("accepted invalid or unsorted splits %q from %q", r.Splits, b)
				}
			}
		}
		checkFuzzDecode(t, b, r, err, EncodeAssignment, dec)
	})
}

func FuzzDecodeLeader(f *testing.F) {
	addGoldenSeeds(f, "leader")
	dec := func(b []byte) (LeaderRecord, error) { return DecodeLeader(KeyLeader, b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && (!isName(r.Owner) || !isName(r.Nonce)) {
			t.Fatalf("accepted an invalid owner or nonce %#v from %q", r, b)
		}
		checkFuzzDecode(t, b, r, err, EncodeLeader, dec)
	})
}

func FuzzDecodePresence(f *testing.F) {
	addGoldenSeeds(f, "presence")
	dec := func(b []byte) (PresenceRecord, error) { return DecodePresence(WorkerKey("w1"), b) }
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := dec(b)
		if err == nil && !isName(r.Nonce) {
			t.Fatalf("accepted an invalid nonce %#v from %q", r, b)
		}
		checkFuzzDecode(t, b, r, err, EncodePresence, dec)
	})
}

// FuzzScanJSON checks the record scanner against encoding/json: it accepts a
// document iff json.Valid does, except that it rejects nesting deeper than
// maxDepth, which no record has.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a" : [1, -0.5e+3, "x\\u00e9\\n", true, false, null, {}]} `, `[`, `"\xff"`,
		`01`, `1.`, `-`, `"\\u12"`, `{"a":1,}`, `[1 2]`, "\"\x01\"", `{"a":1}x`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := skipSpace(b, 0)
		end, ok := scanValue(b, i, 0)
		got := ok && skipSpace(b, end) == len(b)
		want := json.Valid(b)
		if got && !want {
			t.Fatalf("scanner accepts %q, encoding/json rejects it", b)
		}
		if !got && want && nesting(b) < maxDepth {
			t.Fatalf("scanner rejects %q, encoding/json accepts it", b)
		}
	})
}

// nesting returns the deepest array or object nesting of valid JSON b.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// canonicalLayouts are field lists scanCanonical is checked with: the
// split and progress records' (as their decoders pass them) and a short one.
var canonicalLayouts = []struct {
	names    []string
	optional int
}{
	{[]string{"schema", "id", "fp", "weight", "epoch", "status", "owner", "nonce", "attempts", "written_at_ms", "parent"}, 1},
	{[]string{"schema", "id", "fp", "epoch", "owner", "watermark", "state", "completed", "written_at_ms", "descriptor", "cut"}, 2},
	{[]string{"schema", "a"}, 1},
}

// checkCanonical fails t when scanCanonical accepts b with names but
// scanFields does not scan b to the same values without a duplicate or
// unknown field; it reports whether scanCanonical accepted b.
func checkCanonical(t interface{ Fatalf(string, ...any) }, b []byte, names []string, optional int) bool {
	got, ok := scanCanonical(b, names, optional)
	if !ok {
		return false
	}
	want, dup, unknown, pe := scanFields(b, names)
	if pe != nil || dup != "" || unknown != "" || !reflect.DeepEqual(got.vals, want.vals) {
		t.Fatalf("fast path accepts %q as %q; the full scan gives %q (dup %q, unknown %s, err %v)", b, got.vals, want.vals, dup, unknown, pe)
	}
	return true
}

// FuzzScanCanonical checks scanFields's fast path against the full scan:
// whatever scanCanonical accepts, scanFields scans to the same values, with
// no duplicate or unknown field.
func FuzzScanCanonical(f *testing.F) {
	addGoldenSeeds(f, "")
	for _, s := range []string{`{"schema":1}`, `{"schema":1,"a":"x"}`, `{"schema":01}`, `{"schema":1 }`, `{"schema":-0,"a":null}`,
		`{"schema":-}`, `{"schema":1.5}`, `{"schema":1e3}`, `{"schema":nul}`, `{"schema":1,"a":"\u0041"}`, `{"schema":1,"a":"x}`,
		`{"schema":1,"a":1}}`, `{"schema":1,"a":1,"a":2}`, `{"schema":1,"b":1}`, "{\"schema\":1,\"a\":\"\x7f\"}", `{"schema":true,"a":false}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range canonicalLayouts {
			checkCanonical(t, b, l.names, l.optional)
		}
	})
}

// checkSplitCanonical fails t when decodeSplitCanonical accepts b at key
// but decodeSplitFields does not decode it to the same record; it reports
// whether decodeSplitCanonical accepted b.
func checkSplitCanonical(t interface{ Fatalf(string, ...any) }, key string, b []byte, fp uint64) bool {
	got, ok := decodeSplitCanonical(key, b, fp)
	if !ok {
		return false
	}
	want, err := decodeSplitFields(key, b, fp)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path decodes %q at %s to %#v; the general decoder gives %#v, %v", b, key, got, want, err)
	}
	return true
}

// FuzzDecodeSplitCanonical checks DecodeSplit's fast path against the
// general decoder: whatever decodeSplitCanonical accepts, decodeSplitFields
// decodes to the same record. Each input is tried at the key of the id it
// carries, so that the fast path gets past the identity check.
func FuzzDecodeSplitCanonical(f *testing.F) {
	addGoldenSeeds(f, "split")
	for _, s := range []string{
		`{"schema":1,"id":"s0","fp":0,"weight":1,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":0}`,
		`{"schema":1,"id":"s0","fp":0,"weight":01,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":0}`,
		`{"schema":1,"id":"s0","fp":0,"weight":1,"epoch":0,"status":"runnable","owner":"w","nonce":null,"attempts":0,"written_at_ms":-0}`,
		`{"schema":1,"id":"s0","fp":0,"weight":1,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":4294967296,"written_at_ms":0}`,
		`{"schema":1,"id":"s0_1_1","fp":0,"weight":1,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":0,"parent":"s0"}`,
		`{"schema":1,"id":"s0_1_1","fp":0,"weight":1,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":0,"parent":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		key := SplitKey("s0")
		if fs, _, _, pe := scanFields(b, []string{"id"}); pe == nil && len(fs.vals[0]) > 0 && fs.vals[0][0] == '"' {
			if id, ok := decodeString(fs.vals[0]); ok {
				key = PrefixSplit + id
			}
		}
		for _, fp := range []uint64{0, testFP} {
			checkSplitCanonical(t, key, b, fp)
		}
	})
}
