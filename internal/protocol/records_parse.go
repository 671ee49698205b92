package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/spate-go/coordination"
)

// parseErrorKind says which §9.10 reason a parse failure maps to.
type parseErrorKind int

const (
	// errShape: non-JSON, a non-record shape, a missing, unknown or
	// duplicate field, a wrong type, an unknown enum value or an
	// inconsistent record.
	errShape parseErrorKind = iota + 1
	// errSchema: a well-formed schema field other than 1.
	errSchema
	// errBase64: a byte-string field that is not canonical padded base64.
	errBase64
)

// parseError is a parse failure before it is worded for its key.
type parseError struct {
	kind   parseErrorKind
	detail string // errShape: what is wrong; errSchema: the schema literal; errBase64: the field
}

func shapeErr(detail string) *parseError { return &parseError{kind: errShape, detail: detail} }

// describe words the failure without the key, for "unreadable value (...)".
func (pe *parseError) describe() string {
	switch pe.kind {
	case errSchema:
		return "schema " + pe.detail + " record, but this library understands schema 1"
	case errBase64:
		return "field " + pe.detail + " is not valid base64"
	}
	return "not a coordination record: " + pe.detail
}

// recordError words pe with the §9.10 reasons of plan, spec, progress,
// assignment and presence records, as a Fatal *coordination.Error.
func recordError(key string, pe *parseError) error {
	switch pe.kind {
	case errSchema:
		return coordination.Errorf(coordination.Fatal,
			"%s: schema %s record, but this library understands schema 1; upgrade the library or separate the namespaces",
			key, pe.detail)
	case errBase64:
		return coordination.Errorf(coordination.Fatal, "%s: field %s is not valid base64", key, pe.detail)
	}
	return &coordination.Error{
		Kind:   coordination.Fatal,
		Reason: key + ": not a coordination record; something else is writing to this store namespace",
		Err:    errors.New(pe.detail),
	}
}

// valueError words pe with the §9.10 reason of lease and leader values:
// "<key>: unreadable value (<detail>)", Fatal.
func valueError(key string, pe *parseError) error {
	return coordination.Errorf(coordination.Fatal, "%s: unreadable value (%s)", key, pe.describe())
}

// fields is one strictly parsed JSON object whose field set has been checked.
// Its readers record the first failure in err and return zero values after
// it, so a decoder reads every field and checks err once.
type fields struct {
	raw map[string]json.RawMessage
	err *parseError
}

// parseFields parses b as one JSON object with exactly the fields names
// (which must include "schema"), no duplicates and nothing after it. Schema is
// checked before the field set, so a newer schema with new fields reports the
// schema, not an unknown field.
func parseFields(b []byte, names ...string) (*fields, *parseError) {
	raw, pe := parseObject(b)
	if pe != nil {
		return nil, pe
	}
	s, ok := raw["schema"]
	if !ok {
		return nil, shapeErr("missing field schema")
	}
	if !isIntegerLiteral(s) {
		return nil, shapeErr("field schema is not an integer")
	}
	if string(s) != strconv.Itoa(Schema) {
		return nil, &parseError{kind: errSchema, detail: string(s)}
	}
	for _, n := range names {
		if _, ok := raw[n]; !ok {
			return nil, shapeErr("missing field " + n)
		}
	}
	if len(raw) != len(names) {
		for k := range raw {
			known := false
			for _, n := range names {
				known = known || k == n
			}
			if !known {
				return nil, shapeErr("unknown field " + strconv.Quote(k))
			}
		}
	}
	return &fields{raw: raw}, nil
}

// parseObject splits b into its top-level fields, rejecting anything that is
// not exactly one JSON object with distinct field names.
func parseObject(b []byte) (map[string]json.RawMessage, *parseError) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, shapeErr("not JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, shapeErr("not a JSON object")
	}
	raw := make(map[string]json.RawMessage, 12)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, shapeErr("not JSON")
		}
		k, ok := tok.(string)
		if !ok {
			return nil, shapeErr("not JSON")
		}
		if _, dup := raw[k]; dup {
			return nil, shapeErr("duplicate field " + strconv.Quote(k))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, shapeErr("not JSON")
		}
		raw[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, shapeErr("not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, shapeErr("data after the record")
	}
	return raw, nil
}

// isIntegerLiteral reports whether raw is a JSON number with no fraction or
// exponent.
func isIntegerLiteral(raw []byte) bool {
	s := raw
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (f *fields) fail(pe *parseError) {
	if f.err == nil {
		f.err = pe
	}
}

func (f *fields) isNull(name string) bool { return string(f.raw[name]) == "null" }

// uint64 reads an exact unsigned integer (never through a float).
func (f *fields) uint64(name string) uint64 {
	v, err := strconv.ParseUint(string(f.raw[name]), 10, 64)
	if err != nil || !isIntegerLiteral(f.raw[name]) {
		f.fail(shapeErr("field " + name + " is not a uint64"))
		return 0
	}
	return v
}

// uint32 reads an exact unsigned 32-bit integer.
func (f *fields) uint32(name string) uint32 {
	v, err := strconv.ParseUint(string(f.raw[name]), 10, 32)
	if err != nil || !isIntegerLiteral(f.raw[name]) {
		f.fail(shapeErr("field " + name + " is not a uint32"))
		return 0
	}
	return uint32(v)
}

// int64 reads an exact signed integer.
func (f *fields) int64(name string) int64 {
	v, err := strconv.ParseInt(string(f.raw[name]), 10, 64)
	if err != nil || !isIntegerLiteral(f.raw[name]) {
		f.fail(shapeErr("field " + name + " is not an int64"))
		return 0
	}
	return v
}

// nullInt64 reads an int64 or null (nil).
func (f *fields) nullInt64(name string) *int64 {
	if f.isNull(name) {
		return nil
	}
	v := f.int64(name)
	return &v
}

// string reads a JSON string (null is not a string).
func (f *fields) string(name string) string {
	raw := f.raw[name]
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		f.fail(shapeErr("field " + name + " is not a string"))
		return ""
	}
	return s
}

// nonEmptyString reads a JSON string that must not be empty.
func (f *fields) nonEmptyString(name string) string {
	s := f.string(name)
	if s == "" {
		f.fail(shapeErr("field " + name + " is empty"))
	}
	return s
}

// nullName reads a non-empty string or null (""), as for an optional owner.
func (f *fields) nullName(name string) string {
	if f.isNull(name) {
		return ""
	}
	return f.nonEmptyString(name)
}

// bool reads true or false.
func (f *fields) bool(name string) bool {
	switch string(f.raw[name]) {
	case "true":
		return true
	case "false":
		return false
	}
	f.fail(shapeErr("field " + name + " is not a bool"))
	return false
}

// bytes reads a standard padded base64 string; "" is an empty, non-nil slice.
// Only the canonical encoding is accepted, so a record re-encodes to the same
// bytes.
func (f *fields) bytes(name string) []byte {
	raw := f.raw[name]
	if len(raw) == 0 || raw[0] != '"' {
		f.fail(shapeErr("field " + name + " is not a string"))
		return nil
	}
	s := f.string(name)
	if f.err != nil {
		return nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		f.fail(&parseError{kind: errBase64, detail: name})
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// nullBytes reads base64 bytes or null (nil).
func (f *fields) nullBytes(name string) []byte {
	if f.isNull(name) {
		return nil
	}
	return f.bytes(name)
}

// splitIDs reads a strictly ascending array of valid split ids; [] is nil.
func (f *fields) splitIDs(name string) []coordination.SplitID {
	raw := f.raw[name]
	var ss []string
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &ss) != nil {
		f.fail(shapeErr("field " + name + " is not an array of strings"))
		return nil
	}
	if len(ss) == 0 {
		return nil
	}
	ids := make([]coordination.SplitID, len(ss))
	for i, s := range ss {
		if !validName(s) {
			f.fail(shapeErr("field " + name + " holds an invalid split id"))
			return nil
		}
		if i > 0 && ss[i-1] >= s {
			f.fail(shapeErr("field " + name + " is not strictly ascending"))
			return nil
		}
		ids[i] = coordination.SplitID(s)
	}
	return ids
}

// quoteID renders a split id from a record for a reason: bare when it is a
// valid id (as SPEC's "split X" reads), quoted otherwise.
func quoteID(id string) string {
	if validName(id) {
		return id
	}
	return strconv.Quote(id)
}

// keySuffix returns key without prefix; a key without it is returned whole.
func keySuffix(key, prefix string) string {
	s, _ := strings.CutPrefix(key, prefix)
	return s
}
