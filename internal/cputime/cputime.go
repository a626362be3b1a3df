// Package cputime reads the CPU time the process has used, for benchmarks
// whose figures are less moved by other processes on a shared machine when
// counted in CPU than in wall time.
package cputime
