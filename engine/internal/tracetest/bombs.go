package tracetest

import (
	"bytes"
	"strings"
)

// NestingBomb is an OTLP/JSON document of one span whose attribute "bomb"
// is an arrayValue nested levels deep: at a million levels, 28 MB that
// once ended a host with a stack overflow. The span is valid otherwise,
// so only the nesting can refuse it.
func NestingBomb(levels int) []byte {
	const (
		head = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"bomb","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000","attributes":[{"key":"bomb","value":`
		open = `{"arrayValue":{"values":[`
		shut = `]}}`
		tail = `}]}]}]}]}`
	)
	var b bytes.Buffer
	b.Grow(len(head) + levels*(len(open)+len(shut)) + 32)
	b.WriteString(head)
	b.WriteString(strings.Repeat(open, levels))
	b.WriteString(`{"stringValue":"x"}`)
	b.WriteString(strings.Repeat(shut, levels))
	b.WriteString(tail)
	return b.Bytes()
}

// SizeBomb is an OTLP/JSON document of one valid span whose attribute
// "bomb" is a string of n bytes.
func SizeBomb(n int) []byte {
	return []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","name":"big","startTimeUnixNano":"1790607000000000000","endTimeUnixNano":"1790607001000000000","attributes":[{"key":"bomb","value":{"stringValue":"` +
		strings.Repeat("x", n) + `"}}]}]}]}]}`)
}
