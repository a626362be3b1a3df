package engine

import "github.com/retrylab/retrylab/engine/fault"

// Faults are the faults armed by hand for the next tool call of any
// execution (the explorer's hotkeys, 'retrylab arm'), and the server-side
// faults the world asks for each request (world.FaultSource): those a
// run's plan or the armed list hand to that attempt. The host hands it out
// (Host.Faults); it holds no state of its own.
type Faults struct{ h *Host }

// Faults is the host's fault injection.
func (h *Host) Faults() Faults { return Faults{h} }

// Arm sets the fault for the next tool call of any execution. One attempt
// meets at most one armed fault: the last armed replaces any armed before
// it (t T c C in a burst arms C alone), so the trace never stacks faults
// that did not all happen.
func (f Faults) Arm(p fault.Point) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.armed = []fault.Point{p}
}

// Disarm clears every armed fault.
func (f Faults) Disarm() {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.armed = nil
}

// Armed lists the faults waiting for the next tool call.
func (f Faults) Armed() []fault.Point {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return append([]fault.Point(nil), f.h.armed...)
}

// TakeArmed removes and returns the armed faults, for a runner of tool
// calls outside the host's workers (a Temporal activity) whose next attempt
// takes them, as the host's own next attempt would.
func (f Faults) TakeArmed() []fault.Point {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	out := f.h.armed
	f.h.armed = nil
	return out
}

// ServerFaults tells the world which faults to carry out for a request. It
// implements world.FaultSource. Unattributed requests (external clients of
// `retrylab serve`) take the armed server-side faults.
func (f Faults) ServerFaults(execution, step string, attempt int) []fault.Point {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	if execution == "" {
		var out, keep []fault.Point
		for _, p := range f.h.armed {
			if p.ServerSide() {
				out = append(out, p)
			} else {
				keep = append(keep, p)
			}
		}
		f.h.armed = keep
		return out
	}
	st := f.h.execs[execution]
	if st == nil {
		if f.h.cfg.Faults == nil {
			return nil
		}
		f.h.mu.Unlock()
		defer f.h.mu.Lock() // the deferred Unlock above needs it held
		return f.h.cfg.Faults.ServerFaults(execution, step, attempt)
	}
	key := attemptKey{step, attempt}
	out := st.server[key]
	delete(st.server, key)
	return out
}
