// Package badinput holds retrylab's bad-input tests: a corrupt database, a
// database from a newer schema, a database locked by another program, a
// read-only directory, a full disk, malformed and huge request bodies to
// every simulated service and to the runtime API, bad Idempotency-Key
// values, and a scenario file that is not UTF-8. Each test shows the error
// text and that nothing already recorded was lost.
//
// The package has no code of its own; its tests live beside the engine's
// without sharing its TestMain.
package badinput
