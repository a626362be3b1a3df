package otlp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Limits on what a file may hold. A JSON Lines file streams, so only one
// line must fit in memory; a whole OTLP/JSON document or a protobuf file is
// read at once.
const (
	// MaxLine is the longest JSON line accepted (one TracesData).
	MaxLine = 64 << 20
	// MaxDocument is the largest whole-document file (OTLP/JSON or
	// protobuf) accepted; larger traces belong in JSON Lines.
	MaxDocument = 512 << 20
)

// Format is how a file is encoded.
type Format string

// The formats ReadFile understands.
const (
	FormatJSON  Format = "OTLP/JSON"
	FormatJSONL Format = "OTLP/JSON Lines"
	FormatProto Format = "OTLP protobuf"
)

// Batch is one decoded TracesData: the spans of one line of a JSON Lines
// file, or of a whole document.
type Batch struct {
	Line  int // 1-based line of a JSON Lines file; 0 for a whole document
	Spans []Span
}

// ReadFile decodes the OTLP traces in path, gzip-compressed or not, and
// calls fn for each TracesData in order. The encoding is recognised from
// the content: gzip by its magic number, JSON by its first byte, JSON Lines
// when the first line is a complete JSON document, protobuf otherwise.
// Errors name the file, and the line for JSON Lines.
func ReadFile(path string, fn func(Batch) error) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	format, err := Read(f, fn)
	if err != nil {
		return format, fmt.Errorf("%s: %w", path, err)
	}
	return format, nil
}

// Read is ReadFile on a stream.
func Read(r io.Reader, fn func(Batch) error) (Format, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	first, err := firstByte(br)
	if err != nil {
		return "", err
	}
	if first != '{' {
		data, err := readAll(br)
		if err != nil {
			return FormatProto, err
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			return FormatProto, fmt.Errorf("neither OTLP/JSON (it does not start with '{') nor OTLP protobuf: %w", err)
		}
		return FormatProto, deliver(td, 0, fn)
	}
	line, err := readLine(br, 1)
	if err != nil {
		return FormatJSON, err
	}
	if !json.Valid(bytes.TrimSpace(line)) {
		// A document over several lines: read the rest and decode it whole.
		rest, err := readAll(br)
		if err != nil {
			return FormatJSON, err
		}
		doc := append(line, rest...)
		return FormatJSON, decodeJSON(doc, 0, fn)
	}
	for n := 1; ; n++ {
		if len(bytes.TrimSpace(line)) > 0 {
			if err := decodeJSON(line, n, fn); err != nil {
				return FormatJSONL, err
			}
		}
		line, err = readLine(br, n+1)
		if errors.Is(err, io.EOF) {
			return FormatJSONL, nil
		}
		if err != nil {
			return FormatJSONL, err
		}
	}
}

func decodeJSON(doc []byte, line int, fn func(Batch) error) error {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
	if err != nil {
		return atLine(line, fmt.Errorf("not OTLP/JSON: %w", err))
	}
	return deliver(td, line, fn)
}

func deliver(td ptrace.Traces, line int, fn func(Batch) error) error {
	spans, err := Spans(td)
	if err != nil {
		return atLine(line, err)
	}
	return atLine(line, fn(Batch{Line: line, Spans: spans}))
}

func atLine(line int, err error) error {
	if err == nil || line == 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", line, err)
}

// firstByte skips leading white space and returns the first byte left.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return 0, errors.New("empty file: no spans")
		}
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, br.UnreadByte()
	}
}

// readLine returns the next line without its end, io.EOF when none is left.
func readLine(br *bufio.Reader, n int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("line %d: longer than %d MiB; split the batch", n, MaxLine>>20)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		default:
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
}

func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocument {
		return nil, fmt.Errorf("larger than %d MiB; write JSON Lines (one TracesData a line) instead", MaxDocument>>20)
	}
	return data, nil
}
