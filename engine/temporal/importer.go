package temporal

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"github.com/retrylab/retrylab/store"
)

// MaxFile is the largest history file accepted (after gzip): a history
// is decoded whole. Temporal itself caps a history at 50 MB by default.
const MaxFile = 512 << 20

// FileResult is what importing one file did.
type FileResult struct {
	Path  string
	Shape Shape
	Stats
}

// SniffFile reports whether the file at path (gzip-compressed or not)
// looks like a Temporal history; see Sniff.
func SniffFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r, err := maybeGunzip(bufio.NewReaderSize(f, sniffWindow))
	if err != nil {
		return false, nil // not ours to judge: the other readers report it
	}
	prefix := make([]byte, sniffWindow)
	n, _ := io.ReadFull(r, prefix)
	return Sniff(bytes.TrimLeft(prefix[:n], " \t\r\n")), nil
}

func maybeGunzip(br *bufio.Reader) (io.Reader, error) {
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// SniffReader reports whether the stream br (gzip-compressed or not)
// looks like a Temporal history, from what br can peek without reading it;
// br's buffer should hold sniffWindow bytes (bufio.NewReaderSize).
func SniffReader(br *bufio.Reader) bool {
	head, _ := br.Peek(sniffWindow)
	r, err := maybeGunzip(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		return false
	}
	prefix := make([]byte, sniffWindow)
	n, _ := io.ReadFull(r, prefix)
	return Sniff(bytes.TrimLeft(prefix[:n], " \t\r\n"))
}

// ImportReader is ImportFile on a stream (standard input, a pipe) that
// can be read once; name stands for it in the result and in errors.
func ImportReader(db *store.DB, name string, r io.Reader) (FileResult, error) {
	res, data, err := read(name, r)
	if err != nil {
		return FileResult{Path: name}, err
	}
	return res.importData(db, data)
}

// ReadFile reads and decodes a history file, gzip-compressed or not.
// Errors name the file.
func ReadFile(path string) (*FileResult, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(path, f)
}

// read is ReadFile on a stream; path names it.
func read(path string, src io.Reader) (*FileResult, []byte, error) {
	r, err := maybeGunzip(bufio.NewReader(src))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: gzip: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFile {
		return nil, nil, fmt.Errorf("%s: larger than %d MiB", path, MaxFile>>20)
	}
	return &FileResult{Path: path}, data, nil
}

// ImportFile decodes the history in path whole, then stores it in one
// transaction: a file that fails to decode or to store leaves nothing
// behind. The error names the file and, where it can, the event.
func ImportFile(db *store.DB, path string) (FileResult, error) {
	res, data, err := ReadFile(path)
	if err != nil {
		return FileResult{Path: path}, err
	}
	return res.importData(db, data)
}

func (res *FileResult) importData(db *store.DB, data []byte) (FileResult, error) {
	h, shape, err := Decode(data)
	res.Shape = shape
	if err != nil {
		return *res, fmt.Errorf("%s: %w", res.Path, err)
	}
	err = db.Update(func(tx *store.Tx) error {
		st, err := Save(tx, h, res.Path)
		res.Stats = st
		return err
	})
	if err != nil {
		return *res, fmt.Errorf("%s: %w", res.Path, err)
	}
	return *res, nil
}
