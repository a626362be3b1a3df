package store

import (
	"io"
	"os"
)

// IsDatabaseFile reports whether the file at path begins as a bbolt
// database does (a meta page with bbolt's magic), damaged further on or
// not. Commands that replace a file with one of their own (export) refuse
// such a path: a database named by mistake must not be overwritten.
func IsDatabaseFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [pageHeaderSize + 4]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return native.Uint16(head[8:])&metaPage != 0 && native.Uint32(head[pageHeaderSize:]) == boltMagic
}
