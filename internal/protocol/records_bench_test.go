package protocol

import "testing"

// Decoders run once per watch event (SPEC §31.5: about 3 × splits /
// LeaseDuration events per second per worker) and once per listed key.

func BenchmarkDecodeProgress(b *testing.B) {
	enc := EncodeProgress(ProgressRecord{ID: "split-000123", FP: testFP, Epoch: 3, Owner: "worker-1", Attempts: 1,
		Watermark: i64(57), State: []byte("some resume state"), WrittenAtMs: 1700000000000})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeProgress("split.split-000123", enc, testFP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLease(b *testing.B) {
	enc := EncodeLease(LeaseRecord{Owner: "worker-1", Nonce: "0123456789abcdef0123456789abcdef", Epoch: 3})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeLease("split.split-000123", enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeProgress(b *testing.B) {
	r := ProgressRecord{ID: "split-000123", FP: testFP, Epoch: 3, Owner: "worker-1", Attempts: 1,
		Watermark: i64(57), State: []byte("some resume state"), WrittenAtMs: 1700000000000}
	b.ReportAllocs()
	for b.Loop() {
		EncodeProgress(r)
	}
}
