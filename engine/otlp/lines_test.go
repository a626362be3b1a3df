package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// jsonLines is a JSON Lines file of n lines of 16 spans each, with the
// lines named in bad (1-based) replaced by malformed JSON.
func jsonLines(t *testing.T, n int, bad ...int) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(batchOf((i-1)*16, 16))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range bad {
			if k == i {
				line = []byte(`{"resourceSpans": [`)
			}
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Lines decoded side by side still come to the caller in the order of the
// file, every one of them; the first bad line in that order is the error,
// whatever comes after it, and nothing after it is delivered; an error of
// the caller's stops the reading at that line.
func TestJSONLinesInOrderFirstErrorWins(t *testing.T) {
	var got []int
	format, err := Read(bytes.NewReader(jsonLines(t, 40)), func(b Batch) error {
		got = append(got, b.Line)
		if len(b.Spans) != 16 {
			return fmt.Errorf("line %d: %d spans", b.Line, len(b.Spans))
		}
		return nil
	})
	if err != nil || format != FormatJSONL {
		t.Fatalf("%s, %v", format, err)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("lines delivered in the order %v", got)
		}
	}
	if len(got) != 40 {
		t.Fatalf("%d lines delivered, want 40", len(got))
	}

	got = nil
	_, err = Read(bytes.NewReader(jsonLines(t, 40, 7, 9, 30)), func(b Batch) error { got = append(got, b.Line); return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "line 7: ") {
		t.Fatalf("error %v, want one about line 7", err)
	}
	if len(got) != 6 || got[5] != 6 {
		t.Fatalf("delivered %v before the bad line 7", got)
	}

	stop := errors.New("the store failed")
	got = nil
	_, err = Read(bytes.NewReader(jsonLines(t, 40)), func(b Batch) error {
		got = append(got, b.Line)
		if b.Line == 12 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), "line 12: ") || len(got) != 12 {
		t.Fatalf("error %v after %v, want the caller's, at line 12, after 12 lines", err, got)
	}
}

// A line of JSON Lines with more spans than a batch (deliverSpans) is
// delivered whole: its decoder used to keep only its last batch.
func TestJSONLinesLineOfManySpans(t *testing.T) {
	line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(batchOf(0, 2*deliverSpans+100))
	if err != nil {
		t.Fatal(err)
	}
	small, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(batchOf(2*deliverSpans+100, 10))
	file := string(line) + "\n" + string(small) + "\n"
	n := 0
	format, err := Read(strings.NewReader(file), func(b Batch) error { n += len(b.Spans); return nil })
	if err != nil || format != FormatJSONL || n != 2*deliverSpans+110 {
		t.Fatalf("%s: %d spans, %v; want %d", format, n, err, 2*deliverSpans+110)
	}
}
