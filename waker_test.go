package coordination

import (
	"testing"
	"testing/synctest"
)

func pending(w *Waker) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

func TestWakerBurstCollapsesToOne(t *testing.T) {
	w := NewWaker()
	for range 100 {
		w.Wake()
	}
	if !pending(w) {
		t.Fatal("a burst of wakes left nothing pending")
	}
	if pending(w) {
		t.Fatal("a burst of wakes left more than one pending")
	}
}

func TestWakerWakeBeforeParkIsNotLost(t *testing.T) {
	w := NewWaker()
	w.Wake() // between the driver's last Poll and its park
	if !pending(w) {
		t.Fatal("a wake sent before the park was lost")
	}
}

func TestWakerNoWakeNothingPending(t *testing.T) {
	if pending(NewWaker()) {
		t.Fatal("a new Waker has a wake pending")
	}
}

func TestWakerWakesParkedReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewWaker()
		woke := make(chan struct{})
		go func() {
			<-w.C()
			close(woke)
		}()
		synctest.Wait() // the receiver is parked
		w.Wake()
		<-woke
	})
}

func TestWakerWakeNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := NewWaker()
		done := make(chan struct{})
		go func() {
			for range 10 {
				w.Wake() // nobody receives
			}
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Wake blocked with no receiver")
		}
	})
}
