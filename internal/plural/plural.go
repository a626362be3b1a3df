// Package plural counts things in words: "1 span", "2 spans", "0 spans".
package plural

import "fmt"

// Integer is any integer type a count may come in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Count is n followed by noun, with an s unless n is 1: Count(1,
// "execution") is "1 execution", Count(3, "execution") "3 executions". It is
// for regular nouns (the CLI's executions, spans, attempts, runs, events,
// messages, violations); an irregular one needs its own words.
func Count[N Integer](n N, noun string) string {
	return fmt.Sprintf("%d %s", n, Noun(n, noun))
}

// Noun is noun as n of it are called: noun itself when n is 1, else noun+"s".
func Noun[N Integer](n N, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
