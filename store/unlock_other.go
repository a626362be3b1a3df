//go:build !unix

package store

import "os"

// releaseLock is a no-op here: closing the file releases bbolt's lock.
func releaseLock(*os.File) {}
