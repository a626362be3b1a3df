// Package fetch reads traces from where they live: an http(s) URL fetched
// with a timeout and a size limit, its failures said in one line that
// names the URL and the HTTP status, and the search APIs of Grafana Tempo
// and Jaeger, which answer with the ids of the traces that match. What a
// URL answers is not read here: the importer registry sniffs it as it
// sniffs a file (engine/imports).
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultTimeout is how long a request may take, its body read whole,
// unless the client says otherwise.
const DefaultTimeout = time.Minute

// DefaultMaxBytes is the largest answer read unless the client says
// otherwise: the importer's limit on a whole JSON document.
const DefaultMaxBytes int64 = 512 << 20

// ErrTooLarge is the error of a body that goes past the client's
// MaxBytes.
var ErrTooLarge = errors.New("answer too large")

// ErrTimeout is the error of a request, or a body's reading, that takes
// longer than the client's Timeout.
var ErrTimeout = errors.New("no complete answer in time")

// ErrCutShort is the error of a body whose connection ended before the
// body did (fewer bytes than its Content-Length, a chunked body without
// its last chunk).
var ErrCutShort = errors.New("the answer was cut short")

// Client fetches URLs. Its zero value uses http.DefaultTransport,
// DefaultTimeout and DefaultMaxBytes and sends no extra header.
type Client struct {
	// Transport makes the requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds a request from its start to its body's last byte.
	Timeout time.Duration
	// MaxBytes bounds a body's size.
	MaxBytes int64
	// Header is sent with every request (Authorization, say).
	Header http.Header
}

// StatusError is an answer whose status is not 2xx.
type StatusError struct {
	// URL is the URL that answered; From, when it differs, the one asked,
	// which redirected to it.
	URL, From string
	Code      int
	// Detail is the start of the body, one line, or empty.
	Detail string
}

func (e *StatusError) Error() string {
	what := http.StatusText(e.Code)
	switch {
	case e.Code == http.StatusNotFound:
		what = "not found (no trace with that id, or no such API there)"
	case e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden:
		what = strings.ToLower(http.StatusText(e.Code)) + ": the server wants credentials"
	case e.Code >= 500:
		what = "server error"
	}
	from := e.URL
	if e.From != "" && e.From != e.URL {
		from += " (redirected from " + e.From + ")"
	}
	msg := fmt.Sprintf("HTTP %d from %s: %s", e.Code, from, what)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unauthorized reports whether the server asked for credentials (401,
// 403).
func (e *StatusError) Unauthorized() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden
}

// CheckURL refuses what is not an absolute http or https URL with a host
// (the scheme in any case: HTTP:// is http://). Its words show the URL
// with any password in it redacted (Redact).
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a URL: %w", Redact(raw), unwrapURLError(err))
	}
	switch {
	case u.Scheme == "http" || u.Scheme == "https":
	case u.Scheme != "" && strings.Contains(raw, "://"):
		return nil, fmt.Errorf("%s: retrylab fetches only http and https URLs, not %s (a file: give its path)", Redact(raw), u.Scheme)
	default:
		return nil, fmt.Errorf("%s: not an http or https URL", Redact(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s: a URL without a host", Redact(raw))
	}
	return u, nil
}

// IsURL reports whether s is meant as a URL rather than a file's name:
// it starts with a scheme and "://" (http, https, in any case, and the
// schemes CheckURL refuses in words of their own, such as ftp or file).
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// Redact is raw with the password of its user information, if any,
// replaced by "xxxxx": how a URL is shown, stored and said in errors. The
// request is made with the password all the same.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); !has {
		return raw
	}
	return u.Redacted()
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (a port left out is its scheme's default).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "https" {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// maxRedirects is how many redirects a request follows, as Go's client.
const maxRedirects = 10

// checkRedirect lets a redirect carry the client's own headers (Header,
// Authorization among them) and the URL's credentials only to the scheme,
// host and port first asked: Go's client keeps every other header, and
// Authorization on another port of the same host or from https to http.
func (c Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if sameOrigin(via[0].URL, req.URL) {
		return nil
	}
	for name := range c.Header {
		req.Header.Del(name)
	}
	req.Header.Del("Authorization")
	return nil
}

func (c Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Client) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

// Get fetches rawURL and hands back its body, bounded by the client's
// Timeout and MaxBytes: reading past either is an error (ErrTimeout,
// ErrTooLarge), which the importer reading it reports as a failed read,
// so nothing is stored. An answer that is not 2xx is a *StatusError.
// Close the body.
func (c Client) Get(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	if _, err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	shown := Redact(rawURL)
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json, application/x-protobuf;q=0.9, */*;q=0.1")
	hc := http.Client{Transport: c.Transport, CheckRedirect: c.checkRedirect}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s: %w (%v)", shown, ErrTimeout, c.timeout())
		}
		return nil, fmt.Errorf("GET %s: %w", shown, unwrapURLError(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer cancel()
		defer resp.Body.Close()
		return nil, &StatusError{URL: Redact(resp.Request.URL.String()), From: shown, Code: resp.StatusCode, Detail: detail(resp.Body)}
	}
	return &body{rc: resp.Body, left: c.maxBytes(), max: c.maxBytes(), ctx: ctx, cancel: cancel, timeout: c.timeout()}, nil
}

// unwrapURLError drops the *url.Error's repetition of the method and URL,
// which the caller's words already name.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// detail is the start of an error answer's body, on one line.
func detail(r io.Reader) string {
	const most = 200
	buf, _ := io.ReadAll(io.LimitReader(r, most))
	s := strings.Join(strings.Fields(string(buf)), " ")
	if !utf8.ValidString(s) {
		return ""
	}
	if len(buf) == most {
		s += "…"
	}
	return s
}

// body is an answer's body, bounded in size and time.
type body struct {
	rc      io.ReadCloser
	left    int64 // bytes that may still be read before the limit
	max     int64
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration
}

func (b *body) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than the limit says whether the body goes past it.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, TooLarge(b.max)
		}
		return 0, b.readErr(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, b.readErr(err)
}

// readErr says a read that the deadline cut short as such, and one that
// the connection's end cut short (ErrCutShort).
func (b *body) readErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if errors.Is(b.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: the answer took longer than %v", ErrTimeout, b.timeout)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w after %s (the connection closed before its end)", ErrCutShort, sizeWords(b.max-b.left))
	}
	return err
}

// AtLimit reports whether the body was read up to its MaxBytes: a reader
// that failed then failed for the limit, whichever of its own bounds it
// met first (the importer's on a document is the same 512 MiB).
func (b *body) AtLimit() bool { return b.left <= 0 }

// TooLarge is the error of an answer larger than limit bytes, as a body
// read past it says it.
func TooLarge(limit int64) error {
	return fmt.Errorf("%w: larger than %s", ErrTooLarge, sizeWords(limit))
}

func (b *body) Close() error {
	defer b.cancel()
	return b.rc.Close()
}

// sizeWords is a byte count as a person reads a limit: "512 MiB".
func sizeWords(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
