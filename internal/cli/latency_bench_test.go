package cli

import (
	"slices"
	"testing"
	"time"
)

// quantileMS is the q-quantile (0..1) of latencies sorted in increasing
// order, in milliseconds; 0 when there are none.
func quantileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}

// reportLatencies sorts lat and reports its median, 99th percentile and
// maximum as the metrics prefix+"p50-ms", prefix+"p99-ms" and
// prefix+"max-ms" (none when lat is empty).
func reportLatencies(b *testing.B, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(quantileMS(lat, 0.50), prefix+"p50-ms")
	b.ReportMetric(quantileMS(lat, 0.99), prefix+"p99-ms")
	b.ReportMetric(quantileMS(lat, 1), prefix+"max-ms")
}

// timeKeys presses keys in turn, b.N of them, the benchmark's timer on: each
// is timed from its write to the terminal to the first output after it,
// then quiet(30 ms) waits for the screen to settle (the trace a move loads
// comes in a later frame). A key with no output within 300 ms changed
// nothing on screen: it is counted apart, not timed.
func timeKeys(b *testing.B, s *screen, reads chan time.Time, keys []string, quiet func(time.Duration)) (lat []time.Duration, unchanged int) {
	lat = make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		s.press(keys[i%len(keys)])
		select {
		case at := <-reads:
			lat = append(lat, at.Sub(start))
		case <-time.After(300 * time.Millisecond):
			unchanged++
		}
		quiet(30 * time.Millisecond)
	}
	b.StopTimer()
	return lat, unchanged
}
