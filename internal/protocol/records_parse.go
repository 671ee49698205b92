package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/internal/naming"
)

// parseErrorKind says which docs/protocol.md "Parse failures" reason a parse failure maps to.
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

// recordError words pe with the docs/protocol.md "Parse failures" reasons of plan, spec, progress,
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

// valueError words pe with the docs/protocol.md "Parse failures" reason of leader values:
// "<key>: unreadable value (<detail>)", Fatal.
func valueError(key string, pe *parseError) error {
	return coordination.Errorf(coordination.Fatal, "%s: unreadable value (%s)", key, pe.describe())
}

// fields is one strictly parsed JSON object whose field set has been checked.
// Its readers record the first failure in err and return zero values after
// it, so a decoder reads every field and checks err once.
type fields struct {
	names []string
	vals  [][]byte // vals[i] is the raw JSON value of names[i]
	err   *parseError
}

// maxDepth bounds the nesting of arrays and objects a value may have; none of
// our records nests more than one array deep.
const maxDepth = 32

// parseFields parses b as one JSON object with exactly the fields names
// (which must include "schema"), no duplicates and nothing after it. Schema is
// checked before the field set, so a newer schema with new fields reports the
// schema, not an unknown field.
//
// The scanner accepts exactly RFC 8259 JSON (what encoding/json accepts) but
// keeps each value as a sub-slice of b, so decoding a record costs a few
// allocations rather than one per token.
func parseFields(b []byte, names ...string) (fields, *parseError) {
	return parseFieldsOpt(b, 0, names...)
}

// parseFieldsOpt is [parseFields] where the last optional names may be
// absent (their raw value is then nil): the fields of docs/protocol.md
// "Runtime split", omitted when empty.
func parseFieldsOpt(b []byte, optional int, names ...string) (fields, *parseError) {
	f, ok := scanCanonical(b, names, optional)
	var dup, unknown string
	var pe *parseError
	if !ok {
		f, dup, unknown, pe = scanFields(b, names)
	}
	if pe != nil {
		return f, pe
	}
	if dup == "schema" {
		return f, shapeErr("duplicate field schema")
	}
	s := f.raw("schema")
	if s == nil {
		return f, shapeErr("missing field schema")
	}
	if !isIntegerLiteral(s) {
		return f, shapeErr("field schema is not an integer")
	}
	if string(s) != strconv.Itoa(Schema) {
		if len(s) > 20 { // longer than any uint64: keep the reason short
			s = append(s[:20:20], "..."...)
		}
		return f, &parseError{kind: errSchema, detail: string(s)}
	}
	return f, f.checkSet(dup, unknown, optional)
}

// parseObject parses b, a value the record's scan already found to be
// valid JSON, as an object nested in field of a record, with exactly the
// fields names.
func parseObject(b []byte, field string, names ...string) (fields, *parseError) {
	if len(b) == 0 || b[0] != '{' {
		return fields{names: names, vals: make([][]byte, len(names))}, shapeErr("field " + field + " is not an object")
	}
	f, dup, unknown, pe := scanFields(b, names)
	if pe == nil {
		pe = f.checkSet(dup, unknown, 0)
	}
	if pe != nil {
		pe.detail = "field " + field + ": " + pe.detail
	}
	return f, pe
}

// checkSet fails a duplicate, missing or unknown field, in that order; the
// last optional names may be missing.
func (f *fields) checkSet(dup, unknown string, optional int) *parseError {
	if dup != "" {
		return shapeErr("duplicate field " + strconv.Quote(dup))
	}
	for k, v := range f.vals {
		if v == nil && k < len(f.names)-optional {
			return shapeErr("missing field " + f.names[k])
		}
	}
	if unknown != "" {
		return shapeErr("unknown field " + unknown)
	}
	return nil
}

// scanFields scans b as one JSON object and nothing after it, keeping the
// raw values of names; it returns the first duplicate of names and the
// first field not in names (quoted), if any.
func scanFields(b []byte, names []string) (f fields, dup, unknown string, pe *parseError) {
	f = fields{names: names, vals: make([][]byte, len(names))}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if _, ok := scanValue(b, i, 0); ok && skipSpace(b, endOf(b, i)) == len(b) {
			return f, "", "", shapeErr("not a JSON object")
		}
		return f, "", "", shapeErr("not JSON")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return f, "", "", shapeErr("not JSON")
			}
			kend, ok := scanString(b, i)
			if !ok {
				return f, "", "", shapeErr("not JSON")
			}
			key := b[i:kend]
			i = skipSpace(b, kend)
			if i >= len(b) || b[i] != ':' {
				return f, "", "", shapeErr("not JSON")
			}
			i = skipSpace(b, i+1)
			vend, ok := scanValue(b, i, 0)
			if !ok {
				return f, "", "", shapeErr("not JSON")
			}
			if k := f.index(key); k >= 0 {
				if f.vals[k] != nil && dup == "" {
					dup = names[k]
				}
				f.vals[k] = b[i:vend]
			} else if unknown == "" {
				k, _ := decodeString(key)
				unknown = strconv.Quote(k)
			}
			i = skipSpace(b, vend)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return f, "", "", shapeErr("not JSON")
		}
	}
	if skipSpace(b, i) != len(b) {
		if _, ok := scanValue(b, skipSpace(b, i), 0); ok {
			return f, "", "", shapeErr("data after the record")
		}
		return f, "", "", shapeErr("not JSON")
	}
	return f, dup, unknown, nil
}

// scanCanonical is scanFields's fast path for a record in the layout this
// library writes it (encode.go): no whitespace, the fields in the order of
// names with only the last optional ones possibly absent, and every value
// a string of printable ASCII without escapes, a decimal integer, true,
// false or null. It reports false for anything else, which scanFields then
// scans in full; what it accepts, scanFields scans to the same values, with
// no duplicate or unknown field (FuzzScanCanonical). Every worker decodes
// every split record it watches, so this is the watch's hot path.
func scanCanonical(b []byte, names []string, optional int) (fields, bool) {
	f := fields{names: names, vals: make([][]byte, len(names))}
	c := canonicalReader{b: b, ok: true}
	for k, n := range names {
		if k >= len(names)-optional && c.i < len(b) && b[c.i] == '}' {
			break
		}
		sep := byte(',')
		if k == 0 {
			sep = '{'
		}
		if c.field(sep, n); !c.ok {
			return f, false
		}
		end, ok := scanSimple(b, c.i)
		if !ok {
			return f, false
		}
		f.vals[k] = b[c.i:end]
		c.i = end
	}
	return f, c.i == len(b)-1 && b[c.i] == '}'
}

// scanSimple returns the end of the value at b[i] when it is one
// scanCanonical takes: a string of printable ASCII but quote and
// backslash, an integer (-?(0|[1-9][0-9]*)), true, false or null.
func scanSimple(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return quotedEnd(b, i)
	case c == '-' || c >= '0' && c <= '9':
		j := i
		if c == '-' {
			j++
		}
		if j < len(b) && b[j] == '0' {
			return j + 1, true
		}
		end := digits(b, j)
		return end, end > j
	}
	for _, lit := range [...]string{"null", "true", "false"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// quotedEnd returns the end (past the closing quote) of the string at b[i]
// when it is one the canonical layout holds: printable ASCII but quote and
// backslash, so its bytes are its value.
func quotedEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return 0, false
		}
	}
	return 0, false
}

// index returns the position in f.names of the JSON string key (with its
// quotes), or -1.
func (f *fields) index(key []byte) int {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		s, ok := decodeString(key)
		if !ok {
			return -1
		}
		inner = []byte(s)
	}
	for k, n := range f.names {
		if string(inner) == n {
			return k
		}
	}
	return -1
}

// raw returns the raw JSON value of field name, nil if absent.
func (f *fields) raw(name string) []byte {
	for k, n := range f.names {
		if n == name {
			return f.vals[k]
		}
	}
	return nil
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOf returns the end of the value starting at i, or len(b).
func endOf(b []byte, i int) int {
	if end, ok := scanValue(b, i, 0); ok {
		return end
	}
	return len(b)
}

// scanValue returns the end of the JSON value starting at b[i].
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	case c == '[':
		return scanComposite(b, i, depth, ']', false)
	case c == '{':
		return scanComposite(b, i, depth, '}', true)
	}
	return 0, false
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// scanComposite scans an array (members false) or object (members true).
func scanComposite(b []byte, i, depth int, closer byte, members bool) (int, bool) {
	if depth >= maxDepth {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	for {
		if members {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			end, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
		end, ok := scanValue(b, i, depth+1)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		return 0, false
	}
}

// scanString returns the end of the JSON string starting at b[i] == '"'.
func scanString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(b) {
				return 0, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return 0, false
				}
				for _, h := range b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// scanNumber returns the end of the JSON number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// decodeString decodes a scanned JSON string (with its quotes). Invalid UTF-8
// becomes U+FFFD, as encoding/json does.
func decodeString(raw []byte) (string, bool) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
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

// parseUint parses an unsigned integer literal exactly, up to limit.
func parseUint(raw []byte, limit uint64) (uint64, bool) {
	if len(raw) == 0 || !isIntegerLiteral(raw) || raw[0] == '-' {
		return 0, false
	}
	var v uint64
	for _, c := range raw {
		d := uint64(c - '0')
		if v > (limit-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func (f *fields) fail(pe *parseError) {
	if f.err == nil {
		f.err = pe
	}
}

func (f *fields) isNull(name string) bool { return string(f.raw(name)) == "null" }

// uint64 reads an exact unsigned integer (never through a float).
func (f *fields) uint64(name string) uint64 {
	v, ok := parseUint(f.raw(name), math.MaxUint64)
	if !ok {
		f.fail(shapeErr("field " + name + " is not a uint64"))
	}
	return v
}

// uint32 reads an exact unsigned 32-bit integer.
func (f *fields) uint32(name string) uint32 {
	v, ok := parseUint(f.raw(name), math.MaxUint32)
	if !ok {
		f.fail(shapeErr("field " + name + " is not a uint32"))
	}
	return uint32(v)
}

// int64 reads an exact signed integer.
func (f *fields) int64(name string) int64 {
	raw := f.raw(name)
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	v, ok := parseUint(raw, limit)
	if !ok {
		f.fail(shapeErr("field " + name + " is not an int64"))
		return 0
	}
	if neg {
		return int64(-v) // two's complement: -(1<<63) maps to MinInt64
	}
	return int64(v)
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
	raw := f.raw(name)
	if len(raw) == 0 || raw[0] != '"' {
		f.fail(shapeErr("field " + name + " is not a string"))
		return ""
	}
	s, ok := decodeString(raw)
	if !ok {
		f.fail(shapeErr("field " + name + " is not a string"))
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

// nullName reads a valid name (1..128 bytes of [A-Za-z0-9_-], the rule of
// instance ids and nonces) or null (""), as for an optional owner.
func (f *fields) nullName(name string) string {
	if f.isNull(name) {
		return ""
	}
	return f.name(name)
}

// name reads a JSON string that must be a valid name: an instance id or a
// session nonce, which become keys ("worker.<owner>") or are compared with
// them, so a value no worker could have written is corrupt, not a session.
func (f *fields) name(field string) string {
	s := f.string(field)
	if f.err == nil && !isName(s) {
		f.fail(shapeErr(naming.Check("field "+field, s, instanceIDMaxLen)))
	}
	return s
}

// isName reports whether s passes naming.Check as a name of at most
// instanceIDMaxLen bytes, without building the reason it would fail with:
// the rule for split ids, instance ids and session nonces.
func isName[S string | []byte](s S) bool {
	if len(s) < 1 || len(s) > instanceIDMaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !naming.Allowed(s[i]) {
			return false
		}
	}
	return true
}

// checkEpoch fails a record whose epoch is the top of its range: no later
// tenancy could be numbered above it, so a claim would have to wrap (to 0)
// or repeat it, and epochs strictly increase (docs/protocol.md, "Parse
// failures"). No library write reaches it: it is corrupt.
func (f *fields) checkEpoch(epoch uint64) {
	if f.err == nil && epoch == math.MaxUint64 {
		f.fail(shapeErr("field epoch is 18446744073709551615, the top of its range; epochs must be able to increase"))
	}
}

// bool reads true or false.
func (f *fields) bool(name string) bool {
	switch string(f.raw(name)) {
	case "true":
		return true
	case "false":
		return false
	}
	f.fail(shapeErr("field " + name + " is not a bool"))
	return false
}

// bytes reads a standard padded base64 string; "" is an empty, non-nil slice.
// Only the canonical encoding is accepted (padding present, zero padding
// bits, no line breaks), so a record re-encodes to the same bytes.
func (f *fields) bytes(name string) []byte {
	raw := f.raw(name)
	if len(raw) == 0 || raw[0] != '"' {
		f.fail(shapeErr("field " + name + " is not a string"))
		return nil
	}
	src := raw[1 : len(raw)-1]
	if bytes.IndexByte(src, '\\') >= 0 {
		s, ok := decodeString(raw)
		if !ok {
			f.fail(shapeErr("field " + name + " is not a string"))
			return nil
		}
		src = []byte(s)
	}
	enc := base64.StdEncoding.Strict()
	dst := make([]byte, enc.DecodedLen(len(src)))
	n, err := enc.Decode(dst, src)
	if err != nil || bytes.ContainsAny(src, "\r\n") {
		f.fail(&parseError{kind: errBase64, detail: name})
		return nil
	}
	return dst[:n]
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
	raw := f.raw(name)
	bad := func(why string) []coordination.SplitID {
		f.fail(shapeErr("field " + name + " " + why))
		return nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return bad("is not an array of strings")
	}
	var ids []coordination.SplitID
	i := skipSpace(raw, 1)
	for i < len(raw) && raw[i] != ']' {
		if raw[i] != '"' {
			return bad("is not an array of strings")
		}
		end, _ := scanString(raw, i) // the scanner already validated raw
		s, ok := decodeString(raw[i:end])
		if !ok {
			return bad("is not an array of strings")
		}
		if !isName(s) {
			return bad("holds an invalid split id")
		}
		if len(ids) > 0 && string(ids[len(ids)-1]) >= s {
			return bad("is not strictly ascending")
		}
		ids = append(ids, coordination.SplitID(s))
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return ids
}

// quoteID renders a split id from a record for a reason: bare when it is a
// valid id (as "split X" reads in a reason), quoted otherwise.
func quoteID(id string) string {
	if isName(id) {
		return id
	}
	return strconv.Quote(id)
}

// keySuffix returns key without prefix; a key without it is returned whole.
func keySuffix(key, prefix string) string {
	s, _ := strings.CutPrefix(key, prefix)
	return s
}
