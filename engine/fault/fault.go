// Package fault names the points where retrylab injects failures, as listed
// in docs/FAULTS.md, and which side of the wire carries each one out.
package fault

import (
	"fmt"
	"sort"
	"strings"
)

// Point is a place in a tool call where a fault can be injected.
type Point string

// The fault points. Timeouts, server errors and slow responses are carried
// out by the simulated service; crashes by the worker, which kills itself
// with SIGKILL.
const (
	TimeoutBeforeEffect Point = "timeout-before-effect" // request lost: retry is safe even without a key
	TimeoutAfterEffect  Point = "timeout-after-effect"  // response lost: the article's window 1
	CrashBeforeCall     Point = "crash-before-call"     // worker dies before sending
	CrashAfterEffect    Point = "crash-after-effect"    // effect done, result not recorded: window 2
	CrashAfterRecord    Point = "crash-after-record"    // result recorded, then the worker dies
	ServerError         Point = "server-error"          // 500 without an effect
	SlowResponse        Point = "slow-response"         // answers late, but inside the deadline
)

var descriptions = map[Point]string{
	TimeoutBeforeEffect: "timeout before the effect (request lost)",
	TimeoutAfterEffect:  "timeout after the effect (response lost)",
	CrashBeforeCall:     "crash before the call",
	CrashAfterEffect:    "crash after the effect, before recording",
	CrashAfterRecord:    "crash after recording",
	ServerError:         "server error (500)",
	SlowResponse:        "slow response under the deadline",
}

// All lists every point in docs/FAULTS.md order.
func All() []Point {
	return []Point{TimeoutBeforeEffect, TimeoutAfterEffect, CrashBeforeCall, CrashAfterEffect,
		CrashAfterRecord, ServerError, SlowResponse}
}

// Parse turns a name into a Point, listing the valid names when it is unknown.
func Parse(name string) (Point, error) {
	p := Point(strings.TrimSpace(name))
	if _, ok := descriptions[p]; ok {
		return p, nil
	}
	return "", fmt.Errorf("unknown fault point %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the valid point names, sorted.
func Names() []string {
	out := make([]string, 0, len(descriptions))
	for p := range descriptions {
		out = append(out, string(p))
	}
	sort.Strings(out)
	return out
}

// Describe is the human phrase for a point.
func (p Point) Describe() string {
	if d, ok := descriptions[p]; ok {
		return d
	}
	return string(p)
}

// Crash reports whether the worker carries the fault out by killing itself.
func (p Point) Crash() bool {
	return p == CrashBeforeCall || p == CrashAfterEffect || p == CrashAfterRecord
}

// ServerSide reports whether the simulated service carries the fault out.
func (p Point) ServerSide() bool {
	return p == TimeoutBeforeEffect || p == TimeoutAfterEffect || p == ServerError || p == SlowResponse
}
