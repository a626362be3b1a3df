package control

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
)

// Every line the host's encoder writes, and lines it never writes, read
// the same through decodeNotice as through encoding/json.
func TestDecodeNoticeReadsAsEncodingJSON(t *testing.T) {
	var lines [][]byte
	for _, n := range []notice.Notice{
		{Execution: "otlp-conv-conv-932"},
		{Execution: "exec_7K2Q"},
		{Execution: ""},
		{Execution: `a"quote`},
		{Execution: `back\slash`},
		{Execution: "<html> & co"},
		{Execution: "tab\there"},
		{Execution: "ünïcödé ✓"},
		{Execution: "line\u2028sep"},
		{Execution: "bad\xffutf8"},
		{Lagged: true},
		{Host: "import committed"},
		{Execution: "exec_1", Event: &history.Event{Seq: 3, Type: history.ExecutionStarted, Time: time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)}},
	} {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(n); err != nil { // as streamNotices writes it
			t.Fatal(err)
		}
		lines = append(lines, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	lines = append(lines,
		[]byte(`{"execution":"}`), []byte(`{"execution":""}`), []byte(`{"execution":"x"} `),
		[]byte(`{"execution":"x","lagged":true}`), []byte(`{"execution":"a"}"}`), []byte(`not json`), []byte(``))
	for _, line := range lines {
		var fast, slow notice.Notice
		errFast, errSlow := decodeNotice(line, &fast), json.Unmarshal(line, &slow)
		if (errFast == nil) != (errSlow == nil) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: decodeNotice %+v, %v; encoding/json %+v, %v", line, fast, errFast, slow, errSlow)
		}
	}
}

// BenchmarkDecodeNotice reads the line a receiver's stored execution
// makes, through decodeNotice and through encoding/json.
func BenchmarkDecodeNotice(b *testing.B) {
	line := []byte(`{"execution":"otlp-conv-conv-11664"}`)
	for _, c := range []struct {
		name   string
		decode func([]byte, *notice.Notice) error
	}{
		{"decodeNotice", decodeNotice},
		{"encoding-json", func(l []byte, n *notice.Notice) error { return json.Unmarshal(l, n) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var n notice.Notice
				if err := c.decode(line, &n); err != nil || n.Execution == "" {
					b.Fatal(err)
				}
			}
		})
	}
}
