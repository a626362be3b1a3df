package control

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// failAfter gives data, then err.
type failAfter struct {
	r   io.Reader
	err error
}

func (f failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, f.err
	}
	return n, err
}

// A file crosses in frames whole; a read error on the sending side comes
// out on the receiving side as the same error, after the same bytes; a
// sender that stops short is told from a file that ends.
func TestFramesCarryDataAndReadErrors(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*frameSize/16+5) // several frames, the last short
	var framed bytes.Buffer
	if err := writeFrames(&framed, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(newFrameReader(bytes.NewReader(framed.Bytes())))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes of %d, %v", len(got), len(data), err)
	}

	framed.Reset()
	if err := writeFrames(&framed, failAfter{bytes.NewReader(data[:1000]), errors.New("read x.json: input/output error")}); err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(newFrameReader(bytes.NewReader(framed.Bytes())))
	if err == nil || err.Error() != "read x.json: input/output error" || !bytes.Equal(got, data[:1000]) {
		t.Fatalf("a failed read comes out as %d bytes, %v", len(got), err)
	}

	framed.Reset()
	if err := writeFrames(&framed, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 1, 2, framed.Len() / 2, framed.Len() - 1} {
		_, err := io.ReadAll(newFrameReader(bytes.NewReader(framed.Bytes()[:cut])))
		if !errors.Is(err, errSenderGone) {
			t.Errorf("a stream cut at %d of %d: %v, want %v", cut, framed.Len(), err, errSenderGone)
		}
	}
	if _, err := io.ReadAll(newFrameReader(strings.NewReader("x"))); !errors.Is(err, errSenderGone) {
		t.Errorf("garbage: %v", err)
	}
}
