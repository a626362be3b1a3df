package store

import (
	"errors"
	"io"
	"os"
)

// ErrNotDatabase means a file is not a database at all (no bbolt meta page
// in it: a text file, a trace named by mistake), as opposed to a database
// that is damaged. An error that wraps it is an ErrCorrupt too (errors.Is),
// for its exit code; salvage cannot help with such a file, so no message
// suggests it.
var ErrNotDatabase error = notDatabase{}

// notDatabase is ErrNotDatabase's type: its words, and ErrCorrupt's kind.
type notDatabase struct{}

func (notDatabase) Error() string { return "not a database file" }

// Is makes errors.Is(err, ErrCorrupt) hold.
func (notDatabase) Is(target error) bool { return target == ErrCorrupt }

// metaPageSizes are the page sizes at which a second meta page is looked
// for when the first does not say: bbolt's usual ones.
var metaPageSizes = []int{4096, 8192, 16384, 65536, 1024, 2048}

// IsDatabaseFile reports whether the file at path begins as a bbolt
// database does (a meta page with bbolt's magic, the first or, when that
// one is damaged, the second), damaged further on or not. Commands that
// replace a file with one of their own (export) refuse such a path: a
// database named by mistake must not be overwritten; and only such a
// file is worth salvaging.
func IsDatabaseFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 65536+pageHeaderSize+4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	return hasMetaPage(head[:n])
}

// hasMetaPage reports whether data has a bbolt meta page at its start or
// at one of the usual page sizes.
func hasMetaPage(data []byte) bool {
	isMeta := func(off int) bool {
		if off+pageHeaderSize+4 > len(data) {
			return false
		}
		return native.Uint16(data[off+8:])&metaPage != 0 && native.Uint32(data[off+pageHeaderSize:]) == boltMagic
	}
	if isMeta(0) {
		return true
	}
	for _, ps := range metaPageSizes {
		if isMeta(ps) {
			return true
		}
	}
	return false
}
