package protocol

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-go/coordination"
)

var update = flag.Bool("update", false, "rewrite the golden record encodings in testdata/golden")

// testFP is Fingerprint("job:v1"), pinned in hash_test.go.
const testFP uint64 = 0x29a1a1b63833ad47

func i64(v int64) *int64 { return &v }

// goldenRecord is one record with its encoder and decoder, for the golden and
// decode tables.
type goldenRecord struct {
	name   string
	key    string
	record any
}

// goldenFP returns the expected fp of a golden spec, split or progress record by
// name; 0 means testFP.
func goldenFP(name string) uint64 {
	if name == "spec_empty_descriptor" {
		return math.MaxUint64
	}
	return 0
}

// encodeAny encodes a record of any of the seven types.
func encodeAny(t testing.TB, r any) []byte {
	t.Helper()
	switch r := r.(type) {
	case PlanRecord:
		return EncodePlan(r)
	case SpecRecord:
		return EncodeSpec(r)
	case SplitRecord:
		return EncodeSplit(r)
	case ProgressRecord:
		return EncodeProgress(r)
	case AssignmentRecord:
		return EncodeAssignment(r)
	case LeaderRecord:
		return EncodeLeader(r)
	case PresenceRecord:
		return EncodePresence(r)
	}
	t.Fatalf("unknown record type %T", r)
	return nil
}

// decodeAs decodes b at key as the type of like, expecting fp (0 means testFP).
func decodeAs(t testing.TB, like any, key string, b []byte, fp uint64) (any, error) {
	t.Helper()
	if fp == 0 {
		fp = testFP
	}
	switch like.(type) {
	case PlanRecord:
		return DecodePlan(key, b)
	case SpecRecord:
		return DecodeSpec(key, b, fp)
	case SplitRecord:
		return DecodeSplit(key, b, fp)
	case ProgressRecord:
		return DecodeProgress(key, b, fp)
	case AssignmentRecord:
		return DecodeAssignment(key, b)
	case LeaderRecord:
		return DecodeLeader(key, b)
	case PresenceRecord:
		return DecodePresence(key, b)
	}
	t.Fatalf("unknown record type %T", like)
	return nil, nil
}

// testNonce is a session nonce as workers draw them.
const testNonce = "0123456789abcdef0123456789abcdef"

func goldenRecords() []goldenRecord {
	return []goldenRecord{
		{"plan_fresh", KeyPlan, NewPlan("job:v1", 1700000000000)},
		{"plan_final", KeyPlan, PlanRecord{Fingerprint: "job:v1 <&> \"q\"", Generation: 7, Finality: coordination.PlanFinal,
			Planned: 100, PlannerState: []byte("cursor"), UpdatedAtMs: 1700000000123}},
		{"plan_empty_cursor", KeyPlan, PlanRecord{Fingerprint: "f", Generation: math.MaxUint64, Planned: math.MaxUint64, PlannerState: []byte{}}},
		{"spec", SpecKey("s0"), SpecRecord{ID: "s0", FP: testFP, Generation: 3, Weight: 5, Descriptor: []byte("desc\x00\xff")}},
		{"spec_empty_descriptor", SpecKey("s-1_A"), SpecRecord{ID: "s-1_A", FP: math.MaxUint64, Generation: 0, Weight: math.MaxUint64, Descriptor: []byte{}}},
		{"split_seeded_fresh", SplitKey("s0"), SeedSplit("s0", testFP, 3, nil, 1700000000000)},
		{"split_seeded_completed", SplitKey("s0"), SeedSplit("s0", testFP, 3, &coordination.SplitProgress{Watermark: 9, Completed: true}, 1)},
		{"split_owned", SplitKey("s0"), SplitRecord{ID: "s0", FP: testFP, Weight: 1, Epoch: 3, Status: StatusRunnable, Owner: "w1", Nonce: testNonce,
			Attempts: 1, WrittenAtMs: 1700000000000}},
		{"split_handed_back", SplitKey("s0"), SplitRecord{ID: "s0", FP: testFP, Weight: 1, Epoch: 4, Status: StatusRunnable, Attempts: 2, WrittenAtMs: -1}},
		{"split_completed", SplitKey("s0"), SplitRecord{ID: "s0", FP: testFP, Weight: 1, Epoch: 9, Status: StatusCompleted, Owner: "w2", Nonce: "n",
			Attempts: math.MaxUint32, WrittenAtMs: 5}},
		{"split_quarantined", SplitKey("s0"), SplitRecord{ID: "s0", FP: testFP, Weight: 1, Epoch: math.MaxUint64 - 1, Status: StatusQuarantined,
			Attempts: 4, WrittenAtMs: math.MinInt64}},
		{"progress_seeded", ProgressKey("s0"), SeedProgress("s0", testFP, coordination.SplitProgress{Watermark: 57, State: []byte("st")}, 1700000000000)},
		{"progress_seeded_empty_state", ProgressKey("s0"), SeedProgress("s0", testFP, coordination.SplitProgress{Watermark: -5}, 1)},
		{"progress_fresh", ProgressKey("s0"), FreshProgress("s0", testFP, "w1", 3, 1700000000000)},
		{"progress_committed", ProgressKey("s0"), ProgressRecord{ID: "s0", FP: testFP, Epoch: 4, Owner: "w1",
			Watermark: i64(math.MinInt64), State: []byte{}, WrittenAtMs: -1}},
		{"progress_completed", ProgressKey("s0"), ProgressRecord{ID: "s0", FP: testFP, Epoch: math.MaxUint64 - 1, Owner: "w2",
			Watermark: i64(math.MaxInt64), State: []byte("end"), Completed: true, WrittenAtMs: 5}},
		{"progress_cut", ProgressKey("s0"), ProgressRecord{ID: "s0", FP: testFP, Epoch: 4, Owner: "w1", Watermark: i64(40),
			State: []byte("st"), WrittenAtMs: 7, Descriptor: []byte("0..60"),
			Cut: &Cut{ID: "_s0_4_1", Epoch: 4, Counter: 1, Weight: 25, Descriptor: []byte("60..100")}}},
		{"split_residual", SplitKey("_s0_4_1"), Cut{ID: "_s0_4_1", Epoch: 4, Counter: 1, Weight: 25}.ResidualSplit("s0", testFP, 8)},
		{"assignment", AssignKey("w1"), AssignmentRecord{Generation: 12, Splits: []coordination.SplitID{"a", "b-2", "s0"}}},
		{"assignment_empty", AssignKey("w1"), AssignmentRecord{Generation: 0}},
		{"assignment_cuts", AssignKey("w1"), AssignmentRecord{Generation: 12, Splits: []coordination.SplitID{"a", "s0"},
			Cuts: []CutRequest{{Split: "s0", Epoch: 4, Counter: 2, KeepPPM: 600_000, Parts: 1}}}},
		{"leader", KeyLeader, LeaderRecord{Owner: "w1", Nonce: testNonce, Generation: math.MaxUint64}},
		{"presence", WorkerKey("w1"), PresenceRecord{Nonce: testNonce, MaxInFlight: 8}},
		{"presence_default_budget", WorkerKey("w1"), PresenceRecord{Nonce: "n", MaxInFlight: 0}},
		{"presence_estimates", WorkerKey("w1"), PresenceRecord{Nonce: "n", MaxInFlight: 8,
			Remaining: []Estimate{{Split: "s0", Epoch: 4, Remaining: 900}, {Split: "a", Epoch: 1, Remaining: 40}}}},
	}
}

func TestRecordsGolden(t *testing.T) {
	names := map[string]bool{}
	for _, tc := range goldenRecords() {
		names[tc.name+".json"] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[filepath.Base(f)] {
			t.Errorf("stale golden file %s: no record of that name; delete it", f)
		}
	}
	for _, tc := range goldenRecords() {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", "golden", tc.name+".json")
			got := encodeAny(t, tc.record)
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			want = bytes.TrimSuffix(want, []byte("\n"))
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from %s\n got: %s\nwant: %s", path, got, want)
			}
			back, err := decodeAs(t, tc.record, tc.key, want, goldenFP(tc.name))
			if err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			if !reflect.DeepEqual(back, tc.record) {
				t.Fatalf("decode golden:\n got: %#v\nwant: %#v", back, tc.record)
			}
		})
	}
}

// TestEncodeLiteral pins the exact wire form of the records independently of
// the golden files, so an -update cannot silently change the format: fields
// in the order of docs/protocol.md ("Records"), optional fields null, never
// omitted.
func TestEncodeLiteral(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"plan", EncodePlan(NewPlan("job:v1", 17)),
			`{"schema":1,"fingerprint":"job:v1","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":17}`},
		{"split seeded", EncodeSplit(SeedSplit("s0", testFP, 3, nil, 1)),
			`{"schema":1,"id":"s0","fp":2999856630804491591,"weight":3,"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":1}`},
		{"split owned", EncodeSplit(SplitRecord{ID: "s0", FP: 1, Weight: 1, Epoch: 2, Owner: "w1", Nonce: "n", Attempts: 3, WrittenAtMs: 5}),
			`{"schema":1,"id":"s0","fp":1,"weight":1,"epoch":2,"status":"runnable","owner":"w1","nonce":"n","attempts":3,"written_at_ms":5}`},
		{"split quarantined", EncodeSplit(SplitRecord{ID: "s0", FP: 1, Weight: 1, Epoch: 2, Status: StatusQuarantined, Attempts: 3, WrittenAtMs: 5}),
			`{"schema":1,"id":"s0","fp":1,"weight":1,"epoch":2,"status":"quarantined","owner":null,"nonce":null,"attempts":3,"written_at_ms":5}`},
		{"progress fresh", EncodeProgress(FreshProgress("s0", testFP, "w1", 1, 2)),
			`{"schema":1,"id":"s0","fp":2999856630804491591,"epoch":1,"owner":"w1","watermark":null,"state":null,"completed":false,"written_at_ms":2}`},
		{"progress seeded", EncodeProgress(SeedProgress("s0", 1, coordination.SplitProgress{Watermark: 4, State: []byte("ab")}, 5)),
			`{"schema":1,"id":"s0","fp":1,"epoch":0,"owner":null,"watermark":4,"state":"YWI=","completed":false,"written_at_ms":5}`},
		{"progress completed", EncodeProgress(ProgressRecord{ID: "s0", FP: 1, Epoch: 2, Owner: "w1", Watermark: i64(-4), State: []byte{}, Completed: true, WrittenAtMs: 5}),
			`{"schema":1,"id":"s0","fp":1,"epoch":2,"owner":"w1","watermark":-4,"state":"","completed":true,"written_at_ms":5}`},
		{"spec", EncodeSpec(SpecRecord{ID: "s0", FP: 1, Generation: 2, Weight: 0}),
			`{"schema":1,"id":"s0","fp":1,"generation":2,"weight":1,"descriptor":""}`},
		{"assignment unsorted", EncodeAssignment(AssignmentRecord{Generation: 1, Splits: []coordination.SplitID{"b", "a", "b"}}),
			`{"schema":1,"generation":1,"splits":["a","b"]}`},
		{"assignment nil", EncodeAssignment(AssignmentRecord{}), `{"schema":1,"generation":0,"splits":[]}`},
		{"leader", EncodeLeader(LeaderRecord{Owner: "w1", Nonce: "n", Generation: 1}), `{"schema":1,"owner":"w1","nonce":"n","generation":1}`},
		{"presence", EncodePresence(PresenceRecord{Nonce: "n", MaxInFlight: 2}), `{"schema":1,"nonce":"n","max_in_flight":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if string(tc.got) != tc.want {
				t.Fatalf("\n got: %s\nwant: %s", tc.got, tc.want)
			}
		})
	}
}

// wantFatal fails unless err is a Fatal *coordination.Error with reason want.
func wantFatal(t testing.TB, err error, want string) {
	t.Helper()
	var ce *coordination.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v (%T), want a *coordination.Error", err, err)
	}
	if ce.Kind != coordination.Fatal {
		t.Fatalf("kind %v, want fatal", ce.Kind)
	}
	if ce.Reason != want {
		t.Fatalf("reason\n got: %q\nwant: %q", ce.Reason, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	const (
		notRecord = ": not a coordination record; something else is writing to this store namespace"
		schema2   = ": schema 2 record, but this library understands schema 1; upgrade the library or separate the namespaces"
		fpMis     = ": fingerprint mismatch: the record was written by a job with a different configuration; use one namespace per job"
	)
	head := `{"schema":1,"id":"s0","fp":2999856630804491591,`
	progress := func(fields string) string { return head + fields + `}` }
	split := func(fields string) string { return head + `"weight":1,` + fields + `}` }
	okSplitTail := `"epoch":3,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`
	okProgressTail := `"epoch":3,"owner":"w1","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`
	// oldTail is the combined record of the lease-based protocol.
	oldTail := `"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":null,"state":null,"completed":false,"written_at_ms":1`
	for _, tc := range []struct {
		name   string
		decode func(b []byte) error
		in     string
		want   string
	}{
		// plan
		{"plan not json", planDec, `garbage`, "job.plan" + notRecord},
		{"plan empty", planDec, ``, "job.plan" + notRecord},
		{"plan array", planDec, `[1]`, "job.plan" + notRecord},
		{"plan null", planDec, `null`, "job.plan" + notRecord},
		{"plan trailing", planDec, string(EncodePlan(NewPlan("f", 1))) + `{}`, "job.plan" + notRecord},
		{"plan schema 2 with new field", planDec, `{"schema":2,"new":true}`, "job.plan" + schema2},
		{"plan schema string", planDec, `{"schema":"1","fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan schema float", planDec, `{"schema":1.0,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan schema missing", planDec, `{"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan schema huge", planDec, `{"schema":123456789012345678901234567890,"x":1}`, "job.plan: schema 12345678901234567890... record, but this library understands schema 1; upgrade the library or separate the namespaces"},
		{"plan duplicate schema", planDec, `{"schema":2,"schema":1}`, "job.plan" + notRecord},
		{"plan too deep", planDec, `{"schema":2,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "job.plan" + notRecord},
		{"plan escaped names and whitespace", planDec, " {\"sch\\u0065ma\" : 1 ,\n\"fingerprint\":\"f\\u00e9\",\"generation\":0,\"finality\":\"open\",\"planned\":0,\"planner_state\":\"Y\\u0051==\",\"updated_at_ms\":-0}\t", ""},
		{"plan control character", planDec, "{\"schema\":1,\"fingerprint\":\"a\x01\"}", "job.plan" + notRecord},
		{"plan schema 0", planDec, `{"schema":0}`, "job.plan: schema 0 record, but this library understands schema 1; upgrade the library or separate the namespaces"},
		{"plan unknown field", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0,"x":1}`, "job.plan" + notRecord},
		{"plan missing nullable", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan duplicate field", planDec, `{"schema":1,"fingerprint":"f","fingerprint":"g","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan empty fingerprint", planDec, `{"schema":1,"fingerprint":"","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan bad finality", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"Open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan negative generation", planDec, `{"schema":1,"fingerprint":"f","generation":-1,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan generation float", planDec, `{"schema":1,"fingerprint":"f","generation":1e3,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan generation overflow", planDec, `{"schema":1,"fingerprint":"f","generation":18446744073709551616,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "job.plan" + notRecord},
		{"plan bad base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"!!","updated_at_ms":0}`, "job.plan: field planner_state is not valid base64"},
		{"plan unpadded base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"YQ","updated_at_ms":0}`, "job.plan: field planner_state is not valid base64"},
		{"plan url base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"-_8=","updated_at_ms":0}`, "job.plan: field planner_state is not valid base64"},
		{"plan base64 newline", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"YQ\n==","updated_at_ms":0}`, "job.plan: field planner_state is not valid base64"},
		{"plan base64 number", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":5,"updated_at_ms":0}`, "job.plan" + notRecord},
		// spec
		{"spec id mismatch", specDec("spec.s0"), `{"schema":1,"id":"s1","fp":2999856630804491591,"generation":0,"weight":1,"descriptor":""}`, "spec.s0: record is for split s1; the store contents are corrupt"},
		{"spec odd id quoted", specDec("spec.s0"), `{"schema":1,"id":"a.b","fp":2999856630804491591,"generation":0,"weight":1,"descriptor":""}`, `spec.s0: record is for split "a.b"; the store contents are corrupt`},
		{"spec fp mismatch", specDec("spec.s0"), `{"schema":1,"id":"s0","fp":2999856630804491592,"generation":0,"weight":1,"descriptor":""}`, "spec.s0" + fpMis},
		{"spec fp as float", specDec("spec.s0"), `{"schema":1,"id":"s0","fp":2.999856630804491591e18,"generation":0,"weight":1,"descriptor":""}`, "spec.s0" + notRecord},
		{"spec bad descriptor", specDec("spec.s0"), `{"schema":1,"id":"s0","fp":2999856630804491591,"generation":0,"weight":1,"descriptor":"a"}`, "spec.s0: field descriptor is not valid base64"},
		{"spec null descriptor", specDec("spec.s0"), `{"schema":1,"id":"s0","fp":2999856630804491591,"generation":0,"weight":1,"descriptor":null}`, "spec.s0" + notRecord},
		{"spec weight 0", specDec("spec.s0"), `{"schema":1,"id":"s0","fp":2999856630804491591,"generation":0,"weight":0,"descriptor":""}`, "spec.s0" + notRecord},
		{"spec schema 2", specDec("spec.s0"), `{"schema":2,"id":"s0"}`, "spec.s0" + schema2},
		{"spec id null", specDec("spec.s0"), `{"schema":1,"id":null,"fp":2999856630804491591,"generation":0,"weight":1,"descriptor":""}`, "spec.s0" + notRecord},
		// split record
		{"split ok baseline", splitDec("job.split.s0"), split(okSplitTail), ""},
		{"split ok unowned", splitDec("job.split.s0"), split(`"epoch":0,"status":"runnable","owner":null,"nonce":null,"attempts":0,"written_at_ms":1`), ""},
		{"split ok completed keeps owner", splitDec("job.split.s0"), split(`"epoch":3,"status":"completed","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), ""},
		{"split id mismatch", splitDec("job.split.s1"), split(okSplitTail), "job.split.s1: record is for split s0; the store contents are corrupt"},
		{"split fp mismatch", func(b []byte) error { _, err := DecodeSplit("job.split.s0", b, 1); return err }, split(okSplitTail), "job.split.s0" + fpMis},
		{"split schema 2", splitDec("job.split.s0"), `{"schema":2,"id":"s0","lease":true}`, "job.split.s0" + schema2},
		{"split bad status", splitDec("job.split.s0"), split(`"epoch":3,"status":"RUNNABLE","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split null status", splitDec("job.split.s0"), split(`"epoch":3,"status":null,"owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split owner without nonce", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":null,"attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split nonce without owner", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":null,"nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split empty owner", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split empty nonce", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":"","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split owner with a space", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"bad owner","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split nonce with a dot", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":"n.1","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split owner over 128 bytes", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"` + strings.Repeat("w", 129) + `","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split missing nonce", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split attempts over uint32", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":"n","attempts":4294967296,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split negative epoch", splitDec("job.split.s0"), split(`"epoch":-1,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split epoch overflow", splitDec("job.split.s0"), split(`"epoch":18446744073709551616,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split epoch at the top", splitDec("job.split.s0"), split(`"epoch":18446744073709551615,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split written_at float", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"written_at_ms":1.5`), "job.split.s0" + notRecord},
		{"split with progress fields", splitDec("job.split.s0"), split(`"epoch":3,"status":"runnable","owner":"w1","nonce":"n","attempts":1,"watermark":null,"written_at_ms":1`), "job.split.s0" + notRecord},
		{"split old combined record", splitDec("job.split.s0"), split(oldTail), "job.split.s0" + notRecord},
		{"split given a progress record", splitDec("job.split.s0"), progress(okProgressTail), "job.split.s0" + notRecord},
		// progress record
		{"progress ok baseline", progressDec("progress.s0"), progress(okProgressTail), ""},
		{"progress ok seeded", progressDec("progress.s0"), progress(`"epoch":0,"owner":null,"watermark":-1,"state":"","completed":true,"written_at_ms":1`), ""},
		{"progress ok fresh", progressDec("progress.s0"), progress(`"epoch":1,"owner":"w1","watermark":null,"state":null,"completed":false,"written_at_ms":1`), ""},
		{"progress id mismatch", progressDec("progress.s1"), progress(okProgressTail), "progress.s1: record is for split s0; the store contents are corrupt"},
		{"progress fp mismatch", func(b []byte) error { _, err := DecodeProgress("progress.s0", b, 1); return err }, progress(okProgressTail), "progress.s0" + fpMis},
		{"progress schema 2", progressDec("progress.s0"), `{"schema":2,"id":"s0"}`, "progress.s0" + schema2},
		{"progress empty owner", progressDec("progress.s0"), progress(`"epoch":3,"owner":"","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress owner with a wildcard", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w*","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress owner number", progressDec("progress.s0"), progress(`"epoch":3,"owner":1,"watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress watermark overflow", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","watermark":9223372036854775808,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress watermark string", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","watermark":"7","state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress completed null", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","watermark":7,"state":"c3Q=","completed":null,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress bad state", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","watermark":7,"state":"YR==","completed":false,"written_at_ms":1`), "progress.s0: field state is not valid base64"},
		{"progress missing state", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","watermark":7,"completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress negative epoch", progressDec("progress.s0"), progress(`"epoch":-3,"owner":"w1","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress epoch at the top", progressDec("progress.s0"), progress(`"epoch":18446744073709551615,"owner":"w1","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress with status", progressDec("progress.s0"), progress(`"epoch":3,"status":"runnable","owner":"w1","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress with nonce", progressDec("progress.s0"), progress(`"epoch":3,"owner":"w1","nonce":"n","watermark":7,"state":"c3Q=","completed":false,"written_at_ms":1`), "progress.s0" + notRecord},
		{"progress old combined record", progressDec("progress.s0"), progress(oldTail), "progress.s0" + notRecord},
		{"progress given a split record", progressDec("progress.s0"), split(okSplitTail), "progress.s0" + notRecord},
		// assignment
		{"assignment ok", assignDec, `{"schema":1,"generation":3,"splits":["a","b"]}`, ""},
		{"assignment unsorted", assignDec, `{"schema":1,"generation":3,"splits":["b","a"]}`, "job.assign.w1" + notRecord},
		{"assignment duplicate", assignDec, `{"schema":1,"generation":3,"splits":["a","a"]}`, "job.assign.w1" + notRecord},
		{"assignment bad id", assignDec, `{"schema":1,"generation":3,"splits":["a.b"]}`, "job.assign.w1" + notRecord},
		{"assignment null splits", assignDec, `{"schema":1,"generation":3,"splits":null}`, "job.assign.w1" + notRecord},
		{"assignment null entry", assignDec, `{"schema":1,"generation":3,"splits":[null]}`, "job.assign.w1" + notRecord},
		{"assignment schema 2", assignDec, `{"schema":2}`, "job.assign.w1" + schema2},
		// presence
		{"presence ok", presenceDec, `{"schema":1,"nonce":"n","max_in_flight":0}`, ""},
		{"presence empty nonce", presenceDec, `{"schema":1,"nonce":"","max_in_flight":0}`, "worker.w1" + notRecord},
		{"presence negative budget", presenceDec, `{"schema":1,"nonce":"n","max_in_flight":-1}`, "worker.w1" + notRecord},
		{"presence foreign", presenceDec, `hello`, "worker.w1" + notRecord},
		// leader
		{"leader ok", leaderDec, `{"schema":1,"owner":"w1","nonce":"n","generation":1}`, ""},
		{"leader not json", leaderDec, `{`, "leader: unreadable value (not a coordination record: not JSON)"},
		{"leader schema 2", leaderDec, `{"schema":2,"owner":"w1"}`, "leader: unreadable value (schema 2 record, but this library understands schema 1)"},
		{"leader missing nonce", leaderDec, `{"schema":1,"owner":"w1","generation":1}`, "leader: unreadable value (not a coordination record: missing field nonce)"},
		{"leader unknown field", leaderDec, `{"schema":1,"owner":"w1","nonce":"n","generation":1,"x":0}`, `leader: unreadable value (not a coordination record: unknown field "x")`},
		{"leader negative generation", leaderDec, `{"schema":1,"owner":"w1","nonce":"n","generation":-1}`, "leader: unreadable value (not a coordination record: field generation is not a uint64)"},
		{"leader empty owner", leaderDec, `{"schema":1,"owner":"","nonce":"n","generation":1}`, "leader: unreadable value (not a coordination record: field owner must be 1..128 bytes, got 0)"},
		{"leader invalid nonce", leaderDec, `{"schema":1,"owner":"w1","nonce":"a.b","generation":1}`, `leader: unreadable value (not a coordination record: field nonce may only contain [A-Za-z0-9_-], got '.' at byte 1 in "a.b")`},
		{"leader null owner", leaderDec, `{"schema":1,"owner":null,"nonce":"n","generation":1}`, "leader: unreadable value (not a coordination record: field owner is not a string)"},
		{"leader object", leaderDec, `"leader"`, "leader: unreadable value (not a coordination record: not a JSON object)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			wantFatal(t, err, tc.want)
		})
	}
}

func planDec(b []byte) error { _, err := DecodePlan(KeyPlan, b); return err }

func specDec(key string) func([]byte) error {
	return func(b []byte) error { _, err := DecodeSpec(key, b, testFP); return err }
}

func splitDec(key string) func([]byte) error {
	return func(b []byte) error { _, err := DecodeSplit(key, b, testFP); return err }
}

func progressDec(key string) func([]byte) error {
	return func(b []byte) error { _, err := DecodeProgress(key, b, testFP); return err }
}

func assignDec(b []byte) error   { _, err := DecodeAssignment(AssignKey("w1"), b); return err }
func presenceDec(b []byte) error { _, err := DecodePresence(WorkerKey("w1"), b); return err }
func leaderDec(b []byte) error   { _, err := DecodeLeader(KeyLeader, b); return err }

func TestFingerprintMismatch(t *testing.T) {
	err := FingerprintMismatch("job:v1", "job:v2")
	wantFatal(t, err, "job fingerprint mismatch: this store holds the job\n  job:v1\nbut this worker was started for\n  job:v2\nuse a separate store namespace per job")
}
