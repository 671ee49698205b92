package lanes_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spate-go/coordination"
	"github.com/spate-go/coordination/driver"
	"github.com/spate-go/coordination/lanes"
)

// The kit's cost: one lane reading b.N records with an empty body, against
// the hand-written source of the README before the kit (handSource below,
// the same shape: a reader goroutine per lane that checks its stop and
// pause channels once per batch and stores an atomic watermark).
//
//	go test -run '^$' -bench Lane -count 6 ./lanes

func BenchmarkLane(b *testing.B) {
	for _, batch := range []int64{1, 256} {
		b.Run(fmt.Sprintf("batch=%d/hand", batch), func(b *testing.B) { benchLane(b, newHandSource(batch), batch) })
		b.Run(fmt.Sprintf("batch=%d/kit", batch), func(b *testing.B) {
			src := lanes.NewSource(func(ctx context.Context, lane *lanes.Lane[int64]) error {
				if batch == 1 {
					for row := lane.Next(); lane.Claim(row); row++ {
					}
					return nil
				}
				end := lane.End()
				for row := lane.Next(); row < end; row += batch {
					if !lane.Claim(min(row+batch, end) - 1) {
						return nil
					}
				}
				return nil
			}, lanes.Options{})
			benchLane(b, src, batch)
		})
	}
}

// benchLane opens one lane of b.N records on src, starts it and waits for
// its end of input.
func benchLane(b *testing.B, src driver.SourceReader, batch int64) {
	n := int64(max(b.N, 1))
	spec, err := lanes.Split[int64]{ID: "bench", Range: lanes.Range[int64]{Start: 0, End: n}, Weight: uint64(n)}.Spec()
	if err != nil {
		b.Fatal(err)
	}
	w := coordination.NewWaker()
	if err := src.OpenSplit(driver.Opening{Split: spec, Lane: 1, Partition: 1, Epoch: 1, Waker: w}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	src.StartLanes([]driver.Lane{{ID: 1, Partition: 1, Split: spec, Epoch: 1}})
	for len(src.TakeFinishing()) == 0 {
		<-w.C()
	}
	b.StopTimer()
	src.StopLanes([]driver.LaneID{1})
	if ws := src.Acked(); len(ws) != 1 || ws[0].Value != n {
		b.Fatalf("acked %v, want %d", ws, n)
	}
}

// handSource is the README's hand-written range source before the kit,
// reading batch records per check of its stop and pause channels.
type handSource struct {
	driver.SourceDefaults
	batch     int64
	mu        sync.Mutex
	splits    map[coordination.SplitID]*handLane
	lanes     map[driver.LaneID]*handLane
	finishing []coordination.SplitID
}

type handLane struct {
	split     coordination.SplitID
	partition driver.PartitionID
	hi        int64
	acked     atomic.Int64
	waker     *coordination.Waker
	stop      chan struct{}
	done      chan struct{}
	resume    chan struct{}
}

func newHandSource(batch int64) *handSource {
	return &handSource{batch: batch, splits: map[coordination.SplitID]*handLane{}, lanes: map[driver.LaneID]*handLane{}}
}

func (s *handSource) OpenSplit(o driver.Opening) error {
	// the kit's descriptor: version, kind, weight, start, end
	d := o.Split.Descriptor[2:]
	_, n := binary.Uvarint(d)
	lo, m := binary.Varint(d[n:])
	hi, _ := binary.Varint(d[n+m:])
	l := &handLane{split: o.Split.ID, partition: o.Partition, hi: hi, waker: o.Waker}
	l.acked.Store(lo)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.splits[o.Split.ID] = l
	return nil
}

func (s *handSource) EncodeCommit(split coordination.SplitID, w int64) (coordination.SplitProgress, error) {
	return coordination.SplitProgress{Watermark: w}, nil
}

func (s *handSource) Sweep(coordination.SplitID) (*coordination.SplitProgress, error) {
	return nil, nil
}

func (s *handSource) CloseSplit(split coordination.SplitID) {}

func (s *handSource) TakeFinishing() []coordination.SplitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.finishing
	s.finishing = nil
	return f
}

func (s *handSource) StartLanes(lanes []driver.Lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, dl := range lanes {
		l := s.splits[dl.Split.ID]
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		s.lanes[dl.ID] = l
		go s.read(l)
	}
}

func (s *handSource) read(l *handLane) {
	defer close(l.done)
	for row := l.acked.Load(); row < l.hi; {
		if !s.readOn(l) {
			return
		}
		row = min(row+s.batch, l.hi)
		l.acked.Store(row)
	}
	s.mu.Lock()
	s.finishing = append(s.finishing, l.split)
	s.mu.Unlock()
	l.waker.Wake()
}

func (s *handSource) readOn(l *handLane) bool {
	select {
	case <-l.stop:
		return false
	default:
	}
	s.mu.Lock()
	resume := l.resume
	s.mu.Unlock()
	if resume == nil {
		return true
	}
	select {
	case <-l.stop:
		return false
	case <-resume:
		return s.readOn(l)
	}
}

func (s *handSource) StopLanes(ids []driver.LaneID) {
	s.mu.Lock()
	var stopping []*handLane
	for _, id := range ids {
		if l := s.lanes[id]; l != nil {
			close(l.stop)
			delete(s.lanes, id)
			stopping = append(stopping, l)
		}
	}
	s.mu.Unlock()
	for _, l := range stopping {
		<-l.done
	}
}

func (s *handSource) Acked() []driver.Watermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []driver.Watermark
	for _, l := range s.splits {
		ws = append(ws, driver.Watermark{Partition: l.partition, Value: l.acked.Load()})
	}
	return ws
}
