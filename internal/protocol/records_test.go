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

// testFP is fp = H("job:v1") of SPEC Appendix B.
const testFP uint64 = 0x29a1a1b63833ad47

func i64(v int64) *int64 { return &v }

// goldenRecord is one record with its encoder and decoder, for the golden and
// decode tables.
type goldenRecord struct {
	name   string
	key    string
	record any
}

// goldenFP returns the expected fp of a golden spec or progress record by
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
	case ProgressRecord:
		return EncodeProgress(r)
	case AssignmentRecord:
		return EncodeAssignment(r)
	case LeaseRecord:
		return EncodeLease(r)
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
	case ProgressRecord:
		return DecodeProgress(key, b, fp)
	case AssignmentRecord:
		return DecodeAssignment(key, b)
	case LeaseRecord:
		return DecodeLease(key, b)
	case LeaderRecord:
		return DecodeLeader(key, b)
	case PresenceRecord:
		return DecodePresence(key, b)
	}
	t.Fatalf("unknown record type %T", like)
	return nil, nil
}

func goldenRecords() []goldenRecord {
	return []goldenRecord{
		{"plan_fresh", KeyPlan, NewPlan("job:v1", 1700000000000)},
		{"plan_final", KeyPlan, PlanRecord{Fingerprint: "job:v1 <&> \"q\"", Generation: 7, Finality: coordination.PlanFinal,
			Planned: 100, PlannerState: []byte("cursor"), UpdatedAtMs: 1700000000123}},
		{"plan_empty_cursor", KeyPlan, PlanRecord{Fingerprint: "f", Generation: math.MaxUint64, Planned: math.MaxUint64, PlannerState: []byte{}}},
		{"spec", "spec.s0", SpecRecord{ID: "s0", FP: testFP, Generation: 3, Weight: 5, Descriptor: []byte("desc\x00\xff")}},
		{"spec_empty_descriptor", "spec.s-1_A", SpecRecord{ID: "s-1_A", FP: math.MaxUint64, Generation: 0, Weight: math.MaxUint64, Descriptor: []byte{}}},
		{"progress_seeded_fresh", "split.s0", SeedProgress("s0", testFP, nil, 1700000000000)},
		{"progress_seeded_empty_state", "split.s0", SeedProgress("s0", testFP, &coordination.SplitProgress{Watermark: -5}, 1)},
		{"progress_owned", "split.s0", ProgressRecord{ID: "s0", FP: testFP, Epoch: 3, Status: StatusRunnable, Owner: "w1",
			Attempts: 1, Watermark: i64(57), State: []byte("st"), WrittenAtMs: 1700000000000}},
		{"progress_handed_back", "split.s0", ProgressRecord{ID: "s0", FP: testFP, Epoch: 4, Status: StatusRunnable,
			Attempts: 2, Watermark: i64(math.MinInt64), State: []byte{}, WrittenAtMs: -1}},
		{"progress_completed", "split.s0", ProgressRecord{ID: "s0", FP: testFP, Epoch: 9, Status: StatusCompleted, Owner: "w2",
			Attempts: math.MaxUint32, Watermark: i64(math.MaxInt64), State: []byte("end"), Completed: true, WrittenAtMs: 5}},
		{"progress_quarantined", "split.s0", ProgressRecord{ID: "s0", FP: testFP, Epoch: math.MaxUint64, Status: StatusQuarantined,
			Attempts: 4, WrittenAtMs: 6}},
		{"assignment", AssignKey("w1"), AssignmentRecord{Generation: 12, Splits: []coordination.SplitID{"a", "b-2", "s0"}}},
		{"assignment_empty", AssignKey("w1"), AssignmentRecord{Generation: 0}},
		{"lease", SplitKey("s0"), LeaseRecord{Owner: "w1", Nonce: "0123456789abcdef0123456789abcdef", Epoch: 3}},
		{"leader", KeyLeader, LeaderRecord{Owner: "w1", Nonce: "0123456789abcdef0123456789abcdef", Generation: math.MaxUint64}},
		{"presence", WorkerKey("w1"), PresenceRecord{Nonce: "0123456789abcdef0123456789abcdef", MaxInFlight: 8}},
		{"presence_default_budget", WorkerKey("w1"), PresenceRecord{Nonce: "n", MaxInFlight: 0}},
	}
}

func TestRecordsGolden(t *testing.T) {
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

// TestEncodeLiteral pins the exact wire form of two records independently of
// the golden files, so an -update cannot silently change the format.
func TestEncodeLiteral(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"plan", EncodePlan(NewPlan("job:v1", 17)),
			`{"schema":1,"fingerprint":"job:v1","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":17}`},
		{"progress seeded", EncodeProgress(SeedProgress("s0", testFP, nil, 1)),
			`{"schema":1,"id":"s0","fp":2999856630804491591,"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":null,"state":null,"completed":false,"written_at_ms":1}`},
		{"progress owned", EncodeProgress(ProgressRecord{ID: "s0", FP: 1, Epoch: 2, Owner: "w1", Attempts: 3, Watermark: i64(4), State: []byte("ab"), WrittenAtMs: 5}),
			`{"schema":1,"id":"s0","fp":1,"epoch":2,"status":"runnable","owner":"w1","attempts":3,"watermark":4,"state":"YWI=","completed":false,"written_at_ms":5}`},
		{"spec", EncodeSpec(SpecRecord{ID: "s0", FP: 1, Generation: 2, Weight: 0}),
			`{"schema":1,"id":"s0","fp":1,"generation":2,"weight":1,"descriptor":""}`},
		{"assignment unsorted", EncodeAssignment(AssignmentRecord{Generation: 1, Splits: []coordination.SplitID{"b", "a", "b"}}),
			`{"schema":1,"generation":1,"splits":["a","b"]}`},
		{"assignment nil", EncodeAssignment(AssignmentRecord{}), `{"schema":1,"generation":0,"splits":[]}`},
		{"lease", EncodeLease(LeaseRecord{Owner: "w1", Nonce: "n", Epoch: 1}), `{"schema":1,"owner":"w1","nonce":"n","epoch":1}`},
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
	progress := func(fields string) string {
		return `{"schema":1,"id":"s0","fp":2999856630804491591,` + fields + `}`
	}
	okProgressTail := `"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":null,"state":null,"completed":false,"written_at_ms":1`
	for _, tc := range []struct {
		name   string
		decode func(b []byte) error
		in     string
		want   string
	}{
		// plan
		{"plan not json", planDec, `garbage`, "plan" + notRecord},
		{"plan empty", planDec, ``, "plan" + notRecord},
		{"plan array", planDec, `[1]`, "plan" + notRecord},
		{"plan null", planDec, `null`, "plan" + notRecord},
		{"plan trailing", planDec, string(EncodePlan(NewPlan("f", 1))) + `{}`, "plan" + notRecord},
		{"plan schema 2 with new field", planDec, `{"schema":2,"new":true}`, "plan" + schema2},
		{"plan schema string", planDec, `{"schema":"1","fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan schema float", planDec, `{"schema":1.0,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan schema missing", planDec, `{"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan schema huge", planDec, `{"schema":123456789012345678901234567890,"x":1}`, "plan: schema 12345678901234567890... record, but this library understands schema 1; upgrade the library or separate the namespaces"},
		{"plan duplicate schema", planDec, `{"schema":2,"schema":1}`, "plan" + notRecord},
		{"plan too deep", planDec, `{"schema":2,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "plan" + notRecord},
		{"plan escaped names and whitespace", planDec, " {\"sch\\u0065ma\" : 1 ,\n\"fingerprint\":\"f\\u00e9\",\"generation\":0,\"finality\":\"open\",\"planned\":0,\"planner_state\":\"Y\\u0051==\",\"updated_at_ms\":-0}\t", ""},
		{"plan control character", planDec, "{\"schema\":1,\"fingerprint\":\"a\x01\"}", "plan" + notRecord},
		{"plan schema 0", planDec, `{"schema":0}`, "plan: schema 0 record, but this library understands schema 1; upgrade the library or separate the namespaces"},
		{"plan unknown field", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0,"x":1}`, "plan" + notRecord},
		{"plan missing nullable", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan duplicate field", planDec, `{"schema":1,"fingerprint":"f","fingerprint":"g","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan empty fingerprint", planDec, `{"schema":1,"fingerprint":"","generation":0,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan bad finality", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"Open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan negative generation", planDec, `{"schema":1,"fingerprint":"f","generation":-1,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan generation float", planDec, `{"schema":1,"fingerprint":"f","generation":1e3,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan generation overflow", planDec, `{"schema":1,"fingerprint":"f","generation":18446744073709551616,"finality":"open","planned":0,"planner_state":null,"updated_at_ms":0}`, "plan" + notRecord},
		{"plan bad base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"!!","updated_at_ms":0}`, "plan: field planner_state is not valid base64"},
		{"plan unpadded base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"YQ","updated_at_ms":0}`, "plan: field planner_state is not valid base64"},
		{"plan url base64", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"-_8=","updated_at_ms":0}`, "plan: field planner_state is not valid base64"},
		{"plan base64 newline", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":"YQ\n==","updated_at_ms":0}`, "plan: field planner_state is not valid base64"},
		{"plan base64 number", planDec, `{"schema":1,"fingerprint":"f","generation":0,"finality":"open","planned":0,"planner_state":5,"updated_at_ms":0}`, "plan" + notRecord},
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
		// progress
		{"progress ok baseline", progressDec("split.s0"), progress(okProgressTail), ""},
		{"progress id mismatch", progressDec("split.s1"), progress(okProgressTail), "split.s1: record is for split s0; the store contents are corrupt"},
		{"progress fp mismatch", func(b []byte) error { _, err := DecodeProgress("split.s0", b, 1); return err }, progress(okProgressTail), "split.s0" + fpMis},
		{"progress bad status", progressDec("split.s0"), progress(`"epoch":0,"status":"RUNNABLE","owner":null,"attempts":0,"watermark":null,"state":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress completed flag without status", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":1,"state":"","completed":true,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress completed status without flag", progressDec("split.s0"), progress(`"epoch":0,"status":"completed","owner":null,"attempts":0,"watermark":1,"state":"","completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress empty owner", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":"","attempts":0,"watermark":null,"state":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress attempts over uint32", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":4294967296,"watermark":null,"state":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress watermark overflow", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":9223372036854775808,"state":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress watermark string", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":"1","state":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress completed null", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":null,"state":null,"completed":null,"written_at_ms":1`), "split.s0" + notRecord},
		{"progress bad state", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":1,"state":"YR==","completed":false,"written_at_ms":1`), "split.s0: field state is not valid base64"},
		{"progress missing state", progressDec("split.s0"), progress(`"epoch":0,"status":"runnable","owner":null,"attempts":0,"watermark":null,"completed":false,"written_at_ms":1`), "split.s0" + notRecord},
		// assignment
		{"assignment ok", assignDec, `{"schema":1,"generation":3,"splits":["a","b"]}`, ""},
		{"assignment unsorted", assignDec, `{"schema":1,"generation":3,"splits":["b","a"]}`, "assign.w1" + notRecord},
		{"assignment duplicate", assignDec, `{"schema":1,"generation":3,"splits":["a","a"]}`, "assign.w1" + notRecord},
		{"assignment bad id", assignDec, `{"schema":1,"generation":3,"splits":["a.b"]}`, "assign.w1" + notRecord},
		{"assignment null splits", assignDec, `{"schema":1,"generation":3,"splits":null}`, "assign.w1" + notRecord},
		{"assignment null entry", assignDec, `{"schema":1,"generation":3,"splits":[null]}`, "assign.w1" + notRecord},
		{"assignment schema 2", assignDec, `{"schema":2}`, "assign.w1" + schema2},
		// presence
		{"presence ok", presenceDec, `{"schema":1,"nonce":"n","max_in_flight":0}`, ""},
		{"presence negative budget", presenceDec, `{"schema":1,"nonce":"n","max_in_flight":-1}`, "worker.w1" + notRecord},
		{"presence foreign", presenceDec, `hello`, "worker.w1" + notRecord},
		// lease and leader
		{"lease ok", leaseDec, `{"schema":1,"owner":"w1","nonce":"n","epoch":1}`, ""},
		{"lease not json", leaseDec, `{`, "split.s0: unreadable value (not a coordination record: not JSON)"},
		{"lease schema 2", leaseDec, `{"schema":2,"owner":"w1"}`, "split.s0: unreadable value (schema 2 record, but this library understands schema 1)"},
		{"lease missing nonce", leaseDec, `{"schema":1,"owner":"w1","epoch":1}`, "split.s0: unreadable value (not a coordination record: missing field nonce)"},
		{"lease unknown field", leaseDec, `{"schema":1,"owner":"w1","nonce":"n","epoch":1,"x":0}`, `split.s0: unreadable value (not a coordination record: unknown field "x")`},
		{"lease negative epoch", leaseDec, `{"schema":1,"owner":"w1","nonce":"n","epoch":-1}`, "split.s0: unreadable value (not a coordination record: field epoch is not a uint64)"},
		{"lease empty owner", leaseDec, `{"schema":1,"owner":"","nonce":"n","epoch":1}`, "split.s0: unreadable value (not a coordination record: field owner is empty)"},
		{"leader ok", leaderDec, `{"schema":1,"owner":"w1","nonce":"n","generation":1}`, ""},
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

func planDec(b []byte) error { _, err := DecodePlan("plan", b); return err }

func specDec(key string) func([]byte) error {
	return func(b []byte) error { _, err := DecodeSpec(key, b, testFP); return err }
}

func progressDec(key string) func([]byte) error {
	return func(b []byte) error { _, err := DecodeProgress(key, b, testFP); return err }
}

func assignDec(b []byte) error   { _, err := DecodeAssignment("assign.w1", b); return err }
func presenceDec(b []byte) error { _, err := DecodePresence("worker.w1", b); return err }
func leaseDec(b []byte) error    { _, err := DecodeLease("split.s0", b); return err }
func leaderDec(b []byte) error   { _, err := DecodeLeader("leader", b); return err }

func TestFingerprintMismatch(t *testing.T) {
	err := FingerprintMismatch("job:v1", "job:v2")
	wantFatal(t, err, "job fingerprint mismatch: this store holds the job\n  job:v1\nbut this worker was started for\n  job:v2\nuse a separate store namespace per job")
}
