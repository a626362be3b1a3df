//go:build !unix

package otlp

import "time"

// cpuTime is not measured here: the benchmark reports 0.
func cpuTime() time.Duration { return 0 }
