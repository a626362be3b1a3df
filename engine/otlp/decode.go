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
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/internal/memlimit"
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
func Read(r io.Reader, fn func(Batch) error) (Format, error) { return read(r, MaxLine, fn) }

// read is Read with a bound on a JSON line.
func read(r io.Reader, maxLine int, fn func(Batch) error) (Format, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	first, lead, err := firstByte(br)
	if err != nil {
		return "", err
	}
	if first == '{' && lead > 0 {
		// White space before '{' may be JSON, or protobuf whose first
		// field is a record of 123 bytes ("\n{"): try JSON, then protobuf.
		data, err := readAll(br)
		if err != nil {
			return FormatJSON, err
		}
		format, jerr := read(bytes.NewReader(bytes.TrimLeft(data, " \t\r\n")), maxLine, fn)
		if jerr == nil {
			return format, nil
		}
		if td, perr := unmarshalProto(data); perr == nil && td.SpanCount() > 0 {
			return FormatProto, deliver(td, 0, fn)
		}
		return format, jerr
	}
	if first != '{' {
		data, err := readAll(br)
		if err != nil {
			return FormatProto, err
		}
		td, err := unmarshalProto(data)
		if err != nil {
			if enc := byteOrderMark(data); enc != "" {
				return FormatProto, fmt.Errorf("it starts with a %s byte order mark, which retrylab does not read: save it as UTF-8 without one (Windows PowerShell 5's '>' writes UTF-16 with one)", enc)
			}
			if looksLikeHTML(data) {
				return FormatProto, errors.New("it is HTML (a web page: a UI's, a login's or an error page?), not a trace of any format retrylab reads")
			}
			return FormatProto, fmt.Errorf("neither OTLP/JSON (it does not start with '{') nor OTLP protobuf: %w", err)
		}
		return FormatProto, deliver(td, 0, fn)
	}
	line, err := readLine(br, 1, max(maxLine, MaxDocument), nil)
	if err != nil {
		return FormatJSON, err
	}
	if len(line) > maxLine {
		// Longer than a JSON line may be: a document of one line, as
		// 'retrylab export' writes it, under the document's bound. Only
		// JSON Lines (more after a whole first line) are refused.
		rest, err := readAll(br)
		if err != nil {
			return FormatJSON, err
		}
		if len(line)+len(rest) > MaxDocument {
			return FormatJSON, fmt.Errorf("larger than %d MiB; write JSON Lines (one TracesData a line) instead", MaxDocument>>20)
		}
		if len(bytes.TrimSpace(rest)) > 0 && json.Valid(bytes.TrimSpace(line)) {
			return FormatJSONL, fmt.Errorf("line 1: longer than %d MiB; split the batch", maxLine>>20)
		}
		return FormatJSON, decodeDocument(append(line, rest...), splitOver, deliverSpans, fn)
	}
	if atEOF(br) {
		// A file of one line is a plain OTLP/JSON document, valid JSON
		// or not: no need to check it before reading a line 2.
		return FormatJSON, decodeDocument(line, splitOver, deliverSpans, fn)
	}
	if !json.Valid(bytes.TrimSpace(line)) {
		// A document over several lines: read the rest and decode it whole.
		doc, err := readAllAfter(line, br)
		if err != nil {
			return FormatJSON, err
		}
		return FormatJSON, decodeDocument(doc, splitOver, deliverSpans, fn)
	}
	// JSON Lines; a file of one line is a plain OTLP/JSON document.
	next, err := readLine(br, 2, maxLine, nil)
	if err != nil && !errors.Is(err, io.EOF) {
		return FormatJSONL, err
	}
	if errors.Is(err, io.EOF) {
		return FormatJSON, decodeDocument(line, splitOver, deliverSpans, fn)
	}
	return FormatJSONL, readLines(br, maxLine, [][]byte{line, next}, fn)
}

// decoders is how many lines of a JSON Lines file are decoded side by
// side: pdata's decode of a line and the conversion of its spans are most
// of an import's work on one goroutine, the store's and the audit's on
// others (BENCHMARKS.md, 8a).
const decoders = 2

// decoded is one line of a JSON Lines file or one piece of a document,
// decoded (or not: err); ok when it holds spans to deliver.
type decoded struct {
	batch Batch
	ok    bool
	err   error
}

// readLines decodes the lines of a JSON Lines file, the first ones
// already read (lines 1, 2, ...), and calls fn with each line's spans in
// the order of the lines, on the caller's goroutine, side by side
// (sideBySide). On a pipe, as before lines were decoded side by side (the
// next line was read before this one was decoded), an error is returned
// once the line being read ahead has come or the pipe has closed.
func readLines(br *bufio.Reader, maxLine int, first [][]byte, fn func(Batch) error) error {
	next := func(n int, buf []byte) ([]byte, error) {
		if n <= len(first) {
			return first[n-1], nil
		}
		return readLine(br, n, maxLine, buf)
	}
	return sideBySide(next, nil, decodeLine, fn)
}

// decodeLine decodes line n of a JSON Lines file: all its spans in one
// batch (the import cuts them in chunks), none for a blank line.
func decodeLine(n int, line []byte) decoded {
	var d decoded
	if len(bytes.TrimSpace(line)) == 0 {
		return d
	}
	spans, err := spansOf(line, n)
	d.batch, d.ok, d.err = Batch{Line: n, Spans: spans}, err == nil, err
	return d
}

// spansOf decodes doc, line line of a JSON Lines file or a piece of a
// document (0), into all its spans: on the fast path (jsonspans.go), with
// pdata when it declines. Its errors are decodeJSON's: parseJSON's, or the
// first refused span's, with the line.
func spansOf(doc []byte, line int) ([]Span, error) {
	if fast, err := decodeJSONSpans(doc); !errors.Is(err, errJSONDecline) {
		if fast.refused != nil {
			return nil, atLine(line, fast.refused)
		}
		switch len(fast.pieces) {
		case 0:
			return []Span{}, nil // as Spans makes them: empty, not nil
		case 1:
			return fast.pieces[0], nil
		}
		spans := make([]Span, 0, fast.n)
		for _, piece := range fast.pieces {
			spans = append(spans, piece...)
		}
		return spans, nil
	}
	td, err := parseJSON(doc, line)
	if err != nil {
		return nil, err
	}
	spans, err := Spans(td)
	return spans, atLine(line, err)
}

// sideBySide decodes the pieces of a file (lines of JSON Lines, pieces of
// a large document) and calls fn with each piece's spans in the order of
// the pieces, on the caller's goroutine. next reads piece n (1, 2, ...)
// into buf's memory, io.EOF when none is left; decode decodes it; ready,
// unless nil, is asked before fn is first called (or, with no spans to
// deliver, before sideBySide returns) whether the pieces may be: its
// error is returned instead, with nothing delivered. Up to
// decoders pieces are decoded at once, each on a goroutine of its own; a
// piece's buffer is used again once decode is done with it (pdata copies
// what it decodes). The first error in piece order ends it: the pieces
// after it are not delivered, and nothing is left running.
func sideBySide(next func(n int, buf []byte) ([]byte, error), ready func() error, decode func(n int, piece []byte) decoded, fn func(Batch) error) error {
	deliver := func(b Batch) error {
		if ready != nil {
			if err := ready(); err != nil {
				return err
			}
			ready = nil
		}
		return atLine(b.Line, fn(b))
	}
	workers := min(decoders, runtime.GOMAXPROCS(0))
	if workers < 2 {
		for n := 1; ; n++ {
			piece, err := next(n, nil)
			if errors.Is(err, io.EOF) {
				if ready != nil {
					return ready()
				}
				return nil
			} else if err != nil {
				return err
			}
			d := decode(n, piece)
			if err = d.err; err == nil && d.ok {
				err = deliver(d.batch)
			}
			if err != nil {
				return err
			}
		}
	}
	type job struct {
		n     int
		piece []byte
		out   chan decoded
	}
	jobs := make(chan job)
	// order holds each piece's result channel in piece order; its buffer
	// bounds how many pieces are read ahead of the one delivered.
	order := make(chan chan decoded, workers)
	buffers := make(chan []byte, workers+3)
	for range cap(buffers) {
		buffers <- nil
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				d := decode(j.n, j.piece)
				buffers <- j.piece[:0]
				j.out <- d
			}
		}()
	}
	// The reader: one piece at a time, into a free buffer.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(jobs)
		for n := 1; ; n++ {
			var buf []byte
			select {
			case buf = <-buffers:
			case <-stop:
				return
			}
			piece, err := next(n, buf)
			out := make(chan decoded, 1)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				out <- decoded{err: err}
				select {
				case order <- out:
				case <-stop:
				}
				return
			}
			select {
			case order <- out:
			case <-stop:
				return
			}
			select {
			case jobs <- job{n: n, piece: piece, out: out}:
			case <-stop:
				return
			}
		}
	}()
	var err error
	for out := range order {
		d := <-out
		if err = d.err; err == nil && d.ok {
			err = deliver(d.batch)
		}
		if err != nil {
			break
		}
	}
	if err == nil && ready != nil {
		err = ready()
	}
	// The reader stops at its next step (after the piece it may be
	// reading), the workers once they have decoded what they hold: every
	// send of theirs has room or gives way to stop.
	close(stop)
	wg.Wait()
	return err
}

// documentHeap is how many bytes of heap above the soft memory limit a
// whole OTLP/JSON document is given per byte of it while it is decoded and
// delivered (the text and pdata's traces, about three times the text, are
// live at once): 5 halves the CPU of a 50 MB document's import but lets
// the heap peak at 1.9 times the bare decode's; 2 saves about as much
// CPU with the peak at 1.2-1.6 times. Since deliver drops the spans it
// converted from pdata's traces, what is live shrinks as the document is
// stored: 1 keeps the peak at 1.3-1.4 times the bare decode's (1.5: 1.45-1.6)
// for the same CPU on a document of the usual agent's spans, though a
// third more on retrylab's own export (BENCHMARKS.md, 8h, 8j).
const documentHeap = 1

// roomForDocument lifts the process's soft memory limit, when one is set
// (ImportMemoryLimit: 'retrylab import'), by what a whole document of size
// bytes holds live, until the returned func puts it back. Under a limit
// below the live heap the collector runs without pause, at half the CPU:
// an import of a 50 MB document took 11 times the CPU of its bare decode.
// JSON Lines stream and keep the limit. The limit is the process's: the
// CLI imports one file at a time, and a host sets none.
func roomForDocument(size int) (restore func()) {
	return memlimit.Lift(documentHeap * int64(size))
}

func decodeJSON(doc []byte, line int, fn func(Batch) error) error {
	if line == 0 && len(doc) > 8<<20 { // a large document, whole
		defer roomForDocument(len(doc))()
	}
	// The fast path (jsonspans.go) answers what SDKs, collectors and
	// pdata write; what it declines, pdata decodes, as before.
	if fast, err := decodeJSONSpans(doc); !errors.Is(err, errJSONDecline) {
		return deliverDecoded(fast, line, fn)
	}
	td, err := parseJSON(doc, line)
	if err != nil {
		return err
	}
	if line == 0 && td.ResourceSpans().Len() == 0 && !bytes.Contains(doc, []byte(`"resourceSpans"`)) {
		// A document of logs or metrics, not traces. One that says
		// "resourceSpans": [] is an empty trace document, taken as the
		// receiver takes it.
		return errors.New("no spans in this OTLP/JSON file (no resourceSpans)")
	}
	return deliver(td, line, fn)
}

// parseJSON decodes doc, line line of a JSON Lines file or a whole
// document (0), with pdata. Its errors say what is wrong in the user's
// words, and where: the line, span and field of a value of the wrong type.
func parseJSON(doc []byte, line int) (ptrace.Traces, error) {
	td, err := unmarshalJSON(doc)
	var refused *refusal
	if errors.As(err, &refused) {
		return td, atLine(line, err)
	}
	if err != nil {
		return td, jsonFault(doc, line, err)
	}
	return td, nil
}

// jsonFault says why pdata could not decode doc (line line of a JSON
// Lines file, or a whole document: 0) in the user's words, where it can:
// cut short, or the line, span and field of a value of the wrong type;
// else in pdata's, on one line. It runs only once decoding has failed.
func jsonFault(doc []byte, line int, err error) error {
	// json-iterator quotes the bytes around the fault, new lines and all.
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if cutShort(doc) {
		msg = "the JSON ends early (cut short?)"
	} else if at, what, ok := typeFault(doc); ok {
		// A value of the wrong type: its line, span and field, not
		// the parser's words.
		msg = what
		if line == 0 {
			line = at
		}
	}
	return atLine(line, fmt.Errorf("not OTLP/JSON: %s", msg))
}

// cutShort says whether doc is the start of a JSON value that stops before
// its end, as a truncated file is. It runs only once decoding has failed.
func cutShort(doc []byte) bool {
	var v struct{} // nothing kept: the syntax is checked, the content skipped
	err := json.Unmarshal(doc, &v)
	var syn *json.SyntaxError
	return err != nil && errors.As(err, &syn) && syn.Offset >= int64(len(bytes.TrimRight(doc, " \t\r\n")))
}

// refusal is an input refused for a limit (jsonlimit), not for its syntax.
type refusal struct{ error }

func (r *refusal) Unwrap() error { return r.error }

// unmarshalJSON decodes OTLP/JSON once the text is known to nest no deeper
// than jsonlimit.MaxDepth: pdata's decoder recurses without a bound.
func unmarshalJSON(doc []byte) (ptrace.Traces, error) {
	if err := jsonlimit.Check(doc); err != nil {
		return ptrace.Traces{}, &refusal{err}
	}
	return (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
}

// unmarshalProto decodes OTLP protobuf; pdata refuses values nested
// deeper than 100 levels itself.
func unmarshalProto(data []byte) (ptrace.Traces, error) {
	return (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
}

// deliverSpans is the most spans deliver hands fn at once: a document of
// many (what 'retrylab export' writes) goes in pieces, so the import
// chunks and stores it as it does JSON Lines, instead of converting it
// whole first (a second copy of the document in memory).
const deliverSpans = 2048

// deliver converts td's spans and calls fn with them, deliverSpans at a
// time, all with the same line. The first span refused ends it with its
// error, as Spans does; the pieces before it were delivered.
func deliver(td ptrace.Traces, line int, fn func(Batch) error) error {
	if td.SpanCount() <= deliverSpans {
		spans, err := Spans(td)
		if err != nil {
			return atLine(line, err)
		}
		return atLine(line, fn(Batch{Line: line, Spans: spans}))
	}
	piece := make([]Span, 0, deliverSpans)
	var ferr error // fn's: it is returned as it is, not as a refused span
	// td is deliver's own: each piece's spans are dropped from it once
	// converted, so that the document's decoded form shrinks while the
	// import stores it, instead of staying whole to the end beside the
	// spans in its chunks (8h: its peak heap against the bare decode's).
	err := eachDropping(td, deliverSpans, func(s Span, err error) error {
		if err != nil {
			return err
		}
		if piece = append(piece, s); len(piece) == deliverSpans {
			ferr = fn(Batch{Line: line, Spans: piece})
			clear(piece)
			piece = piece[:0]
			return ferr
		}
		return nil
	})
	if err == nil && len(piece) > 0 {
		ferr = fn(Batch{Line: line, Spans: piece})
		err = ferr
	}
	return atLine(line, err)
}

func atLine(line int, err error) error {
	if err == nil || line == 0 {
		return err
	}
	return fmt.Errorf("line %d: %w", line, err)
}

// firstByte finds the first byte that is not white space, without
// consuming anything, and says how much white space came before it.
func firstByte(br *bufio.Reader) (byte, int, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if n == 1 || errors.Is(err, io.EOF) {
				return 0, 0, errors.New("empty file: no spans")
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, 0, errors.New("no content in the first MiB: only white space")
			}
			return 0, 0, err
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b[n-1], n - 1, nil
	}
}

// atEOF says whether nothing is left to read in br.
func atEOF(br *bufio.Reader) bool {
	_, err := br.Peek(1)
	return errors.Is(err, io.EOF)
}

// readLine returns the next line without its end, io.EOF when none is left.
// It reads it into buf's memory, or, for a line longer than buf holds,
// into chunks joined once at its end: growing the line as it comes would
// copy it over and over (a 33 MB line, 160 MB of copies into ever larger
// memory).
func readLine(br *bufio.Reader, n, maxLine int, buf []byte) ([]byte, error) {
	line := buf[:0]
	var long chunks
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+long.size+len(chunk) > maxLine {
			return nil, fmt.Errorf("line %d: longer than %d MiB; split the batch", n, maxLine>>20)
		}
		switch {
		case long.parts == nil && (len(line) == 0 || len(line)+len(chunk) <= cap(line)):
			line = append(line, chunk...)
		case long.parts == nil:
			long.parts, long.size = [][]byte{line}, len(line)
			long.add(bytes.Clone(chunk))
		default:
			long.add(bytes.Clone(chunk))
		}
		switch {
		case err == nil:
			return long.join(line), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if line = long.join(line); len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		default:
			return nil, fmt.Errorf("line %d: %w", n, cutShortRead(err))
		}
	}
}

// chunks is a long text read a chunk at a time, to be joined once whole.
type chunks struct {
	parts [][]byte
	size  int
}

func (c *chunks) add(p []byte) {
	c.parts = append(c.parts, p)
	c.size += len(p)
}

// join is the chunks one after the other, or short when there are none.
func (c *chunks) join(short []byte) []byte {
	if c.parts == nil {
		return short
	}
	out := make([]byte, 0, c.size)
	for _, p := range c.parts {
		out = append(out, p...)
	}
	return out
}

// readAll reads r to its end, up to MaxDocument bytes.
func readAll(r io.Reader) ([]byte, error) { return readAllAfter(nil, r) }

// readAllAfter is prefix followed by what is left in r, up to MaxDocument
// bytes of it, read in chunks joined once at the end (as readLine does).
func readAllAfter(prefix []byte, r io.Reader) ([]byte, error) {
	long := chunks{parts: [][]byte{prefix}, size: len(prefix)}
	for size := 64 << 10; ; size = min(2*size, 4<<20) {
		p := make([]byte, size)
		n := 0
		var err error
		for n < len(p) && err == nil {
			var k int
			k, err = r.Read(p[n:])
			n += k
		}
		if n > 0 {
			long.add(p[:n:n])
		}
		if long.size-len(prefix) > MaxDocument {
			return nil, fmt.Errorf("larger than %d MiB; write JSON Lines (one TracesData a line) instead", MaxDocument>>20)
		}
		if errors.Is(err, io.EOF) {
			if len(long.parts) == 2 && len(prefix) == 0 {
				return long.parts[1], nil
			}
			return long.join(nil), nil
		}
		if err != nil {
			return nil, cutShortRead(err)
		}
	}
}

// cutShortRead says what an unexpected end of a compressed stream means:
// the file was cut short (a gzip file copied or downloaded in part).
func cutShortRead(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the compressed file ends early (cut short?): %w", err)
	}
	return err
}

// looksLikeHTML reports whether data starts as an HTML page does: a
// doctype, an <html> or <head> tag, or a comment, after white space.
func looksLikeHTML(data []byte) bool {
	head := bytes.ToLower(bytes.TrimLeft(data[:min(len(data), 512)], " \t\r\n"))
	for _, start := range []string{"<!doctype html", "<html", "<head", "<!--", "<body"} {
		if bytes.HasPrefix(head, []byte(start)) {
			return true
		}
	}
	return false
}

// byteOrderMark names the Unicode byte order mark data starts with, if any:
// what an editor or Windows PowerShell may put before a JSON document.
func byteOrderMark(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return "UTF-8"
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return "UTF-16"
	}
	return ""
}
