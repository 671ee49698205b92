package coordination_test

import (
	"errors"
	"fmt"

	"github.com/spate-go/coordination"
)

func ExampleNewSplitID() {
	if _, err := coordination.NewSplitID("2024-01-05_part-3"); err == nil {
		fmt.Println("accepted")
	}
	_, err := coordination.NewSplitID("bucket/key.csv")
	fmt.Println(err)
	// Output:
	// accepted
	// coordination error (fatal): split id may only contain [A-Za-z0-9_-], got '/' at byte 6 in "bucket/key.csv"
}

func ExampleConfig_Validate() {
	cfg := coordination.DefaultConfig()
	cfg.InstanceID = "worker-0.pipeline"
	fmt.Println(cfg.Validate())
	// Output:
	// coordination error (fatal): InstanceID may only contain [A-Za-z0-9_-], got '.' at byte 8 in "worker-0.pipeline" (replace dots in pod names, for example with '-')
}

func ExampleKindOf() {
	err := fmt.Errorf("commit: %w", &coordination.Error{Kind: coordination.Fenced, Reason: "split s1: another worker owns it now; nothing was written"})
	switch coordination.KindOf(err) {
	case coordination.Retryable:
		fmt.Println("retry later")
	case coordination.Fenced:
		fmt.Println("stop the split")
	case coordination.Fatal:
		fmt.Println("end the run")
	}
	fmt.Println(errors.Is(err, coordination.ErrFenced))
	// Output:
	// stop the split
	// true
}

func ExampleWaker() {
	w := coordination.NewWaker()
	w.Wake()
	w.Wake() // collapses into the pending wake
	<-w.C()  // the driver parks here until something happens
	select {
	case <-w.C():
		fmt.Println("second wake")
	default:
		fmt.Println("one wake for the burst")
	}
	// Output:
	// one wake for the burst
}
