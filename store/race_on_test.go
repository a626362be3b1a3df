//go:build race

package store

// raceDetector says the tests run under -race, which also turns on
// checkptr: its checks of unsafe pointer conversions end the process on
// some of bbolt's reads of a damaged, unwalked page (a bucket header read
// from a value shorter than one) that a normal build survives.
const raceDetector = true
