package sim

import (
	"fmt"
	"strings"
)

// Recorder is an Observer that keeps a text log of everything the network
// did, one line per call, and checks that no resource ever carried more than
// its capacity. Two runs are bit-identical when their logs are equal.
type Recorder struct {
	Lines []string
	// Overloads lists every busy interval above capacity (beyond a relative
	// 1e-9 for floating-point rounding). A correct engine leaves it empty.
	Overloads []string
	// BusyBytes sums the wire bytes each resource carried, by resource ID.
	BusyBytes map[ResourceID]float64
}

var _ Observer = (*Recorder)(nil)

// FlowStarted implements Observer.
func (r *Recorder) FlowStarted(t Time, f *Flow) {
	r.Lines = append(r.Lines, fmt.Sprintf("%d start #%d %s %s %d B", t, f.ID, f.Spec.Kind, f.Spec.Label, f.Spec.Bytes))
}

// FlowRateChanged implements Observer.
func (r *Recorder) FlowRateChanged(t Time, f *Flow) {
	r.Lines = append(r.Lines, fmt.Sprintf("%d rate #%d %.6g finish %d", t, f.ID, f.rate, f.finish))
}

// FlowFinished implements Observer.
func (r *Recorder) FlowFinished(t Time, f *Flow) {
	r.Lines = append(r.Lines, fmt.Sprintf("%d end #%d", t, f.ID))
}

// ResourceBusy implements Observer.
func (r *Recorder) ResourceBusy(res *Resource, from, to Time, load Rate) {
	r.Lines = append(r.Lines, fmt.Sprintf("%d-%d busy %s %.6g", from, to, res.Name, float64(load)))
	if float64(load) > float64(res.Capacity)*(1+1e-9) {
		r.Overloads = append(r.Overloads, fmt.Sprintf("%s carried %v > capacity %v during [%v, %v)", res.Name, load, res.Capacity, from, to))
	}
	if r.BusyBytes == nil {
		r.BusyBytes = map[ResourceID]float64{}
	}
	r.BusyBytes[res.ID] += float64(load) * to.Sub(from).Seconds()
}

// String returns the log, one line per event.
func (r *Recorder) String() string { return strings.Join(r.Lines, "\n") }
