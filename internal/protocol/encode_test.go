package protocol

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// TestHandEncodingIsJSONs: the hand encoders write exactly what
// encoding/json writes for the split and progress wire structs, for any
// record, ids and owners with characters JSON escapes included, and the
// optional fields of "Runtime split" present or omitted.
func TestHandEncodingIsJSONs(t *testing.T) {
	anyString := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9<>&"\\\x00-\x1f\x{2028}]{0,12}`))
	rapid.Check(t, func(t *rapid.T) {
		sw := splitWire{rapid.IntRange(0, 9).Draw(t, "schema"), anyString.Draw(t, "id"), rapid.Uint64().Draw(t, "fp"),
			rapid.Uint64().Draw(t, "weight"), rapid.Uint64().Draw(t, "epoch"), anyString.Draw(t, "status"),
			rapid.Ptr(anyString, true).Draw(t, "owner"), rapid.Ptr(anyString, true).Draw(t, "nonce"),
			rapid.Uint32().Draw(t, "attempts"), rapid.Int64().Draw(t, "written"), rapid.Ptr(anyString, true).Draw(t, "parent")}
		want, err := json.Marshal(sw)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendSplit(nil, sw); string(got) != string(want) {
			t.Fatalf("split:\n got %s\nwant %s", got, want)
		}
		nullBytes := func(label string) []byte {
			if rapid.Bool().Draw(t, "has "+label) {
				return rapid.SliceOf(rapid.Byte()).Draw(t, label)
			}
			return nil
		}
		state := nullBytes("state")
		var cut *cutWire
		if rapid.Bool().Draw(t, "has cut") {
			cut = &cutWire{anyString.Draw(t, "cut id"), rapid.Uint64().Draw(t, "cut epoch"), rapid.Uint64().Draw(t, "counter"),
				rapid.Uint64().Draw(t, "cut weight"), nullBytes("cut descriptor")}
		}
		pw := progressWire{rapid.IntRange(0, 9).Draw(t, "pschema"), anyString.Draw(t, "pid"), rapid.Uint64().Draw(t, "pfp"),
			rapid.Uint64().Draw(t, "pepoch"), rapid.Ptr(anyString, true).Draw(t, "powner"),
			rapid.Ptr(rapid.Int64(), true).Draw(t, "watermark"), state, rapid.Bool().Draw(t, "completed"),
			rapid.Int64().Draw(t, "pwritten"), nullBytes("descriptor"), cut}
		want, err = json.Marshal(pw)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendProgress(nil, pw); string(got) != string(want) {
			t.Fatalf("progress:\n got %s\nwant %s", got, want)
		}
	})
}
