package protocol

import "testing"

func TestHashVectors(t *testing.T) {
	fp := Fingerprint("job:v1")
	for _, tc := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"H(empty)", H(nil), 0xcbf29ce484222325},
		{"H(a)", H([]byte("a")), 0xaf63dc4c8601ec8c},
		{"fp", fp, 0x29a1a1b63833ad47},
		{"fp decimal", fp, 2999856630804491591},
		{"Hs(0,a)", Hs(0, []byte("a")), 0xe604613a248ff1ac},
		{"memberHash(w1)", MemberHash(fp, "w1"), 0x982df9c006562f8d},
		{"memberHash(w2)", MemberHash(fp, "w2"), 0x982df6c006562a74},
		{"splitHash(s0)", SplitHash(fp, "s0"), 0x983b70c00661841e},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %#x, want %#x", tc.got, tc.want)
			}
		})
	}
}
