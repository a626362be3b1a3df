//go:build !linux

package cputime

// Host is not measured here: benchmarks report no steal.
func Host() HostTicks { return HostTicks{} }
