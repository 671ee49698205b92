package protocol

import "testing"

// Every worker decodes a split record once per watch event of job.split.
// (claims, hand-backs, completions) and once per listed key; progress
// records are decoded only by the claimant's fence and an owner's lost
// commit, and encoded on every commit (docs/protocol.md, "Keys", "Commits").

var (
	benchSplit = SplitRecord{ID: "split-000123", FP: testFP, Epoch: 3, Owner: "worker-1",
		Nonce: "0123456789abcdef0123456789abcdef", Attempts: 1, WrittenAtMs: 1700000000000}
	benchProgress = ProgressRecord{ID: "split-000123", FP: testFP, Epoch: 3, Owner: "worker-1",
		Watermark: i64(57), State: []byte("some resume state"), WrittenAtMs: 1700000000000}
)

func BenchmarkDecodeSplit(b *testing.B) {
	enc := EncodeSplit(benchSplit)
	key := SplitKey(benchSplit.ID)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSplit(key, enc, testFP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeSplit(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		EncodeSplit(benchSplit)
	}
}

func BenchmarkDecodeProgress(b *testing.B) {
	enc := EncodeProgress(benchProgress)
	key := ProgressKey(benchProgress.ID)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeProgress(key, enc, testFP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeProgress(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		EncodeProgress(benchProgress)
	}
}

func BenchmarkDecodePresence(b *testing.B) {
	enc := EncodePresence(PresenceRecord{Nonce: "0123456789abcdef0123456789abcdef", MaxInFlight: 8})
	key := WorkerKey("worker-1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePresence(key, enc); err != nil {
			b.Fatal(err)
		}
	}
}
