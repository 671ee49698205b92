package lanes

import "github.com/spate-go/coordination"

// MustPlanner is [Planner] for a plan fixed in the program (as
// regexp.MustCompile is for a fixed pattern): it panics with Planner's
// error when the splits are empty or one of them is invalid.
func MustPlanner[P Position](splits []Split[P]) coordination.Planner {
	p, err := Planner(splits)
	if err != nil {
		panic(err)
	}
	return p
}
