package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Off loopback, serve's receivers ask a token: refused at start without
// one (the gRPC one too), and once started with --token, a request
// without it or with another gets 401 and one with it is imported. The
// banner says so in one line.
func TestCLIServeOTLPOffLoopbackAsksToken(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	want := "retrylab: --otlp-grpc 0.0.0.0:4317 is off loopback: give --token (or $RETRYLAB_OTLP_TOKEN) so that only agents with it can send, or listen on 127.0.0.1"
	if msg := fails(t, 2, db, "serve", "--otlp-grpc", "0.0.0.0:4317"); msg != want {
		t.Errorf("serve --otlp-grpc 0.0.0.0:4317: %q, want %q", msg, want)
	}
	// A token that guards nothing, or is short enough to guess, is
	// refused (before, both were taken without a word).
	want = "retrylab: --token is the OTLP receivers' token: give --otlp or --otlp-grpc with it"
	if msg := fails(t, 2, db, "serve", "--token", "abcdefghijklmnopq"); msg != want {
		t.Errorf("serve --token without a receiver: %q, want %q", msg, want)
	}
	want = "retrylab: --token is 1 character: give a token of at least 16, hard to guess (openssl rand -hex 16)"
	if msg := fails(t, 2, db, "serve", "--otlp", "0.0.0.0:0", "--token", "x"); msg != want {
		t.Errorf("serve --token x: %q, want %q", msg, want)
	}
	want = "retrylab: --otlp-grpc-max-in-flight 0: give a number above zero"
	if msg := fails(t, 2, db, "serve", "--otlp-grpc", "127.0.0.1:0", "--otlp-grpc-max-in-flight", "0"); msg != want {
		t.Errorf("serve --otlp-grpc-max-in-flight 0: %q, want %q", msg, want)
	}
	serve := background(t, db, "serve", "--otlp", "0.0.0.0:0", "--otlp-grpc", "127.0.0.1:0", "--otlp-grpc-max-in-flight", "8", "--token", "t0ken-for-test-16")
	serve.banner(t)
	out := serve.stdout.String()
	m := regexp.MustCompile(`(?m)^  OTLP      POST http://(?:0\.0\.0\.0|\[::\]):(\d+)/v1/traces .*\n  OTLP      gRPC 127\.0\.0\.1:\d+ .*\n  OTLP      every request must carry "Authorization: Bearer <token>" .*\npress Ctrl-C to stop$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("serve's banner:\n%s", out)
	}
	url := "http://127.0.0.1:" + m[1] + "/v1/traces"
	post := func(auth string) int {
		doc, err := os.Open(filepath.Join(repoRoot, "fixtures", "otlp", "adk-send-twice.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer doc.Close()
		req, _ := http.NewRequest(http.MethodPost, url, doc)
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, auth := range []string{"", "Bearer wrong"} {
		if code := post(auth); code != http.StatusUnauthorized {
			t.Errorf("POST with %q: %d, want 401", auth, code)
		}
	}
	if r := must(t, 1, db, "show", "otlp-conv-sess-adk-mail-1"); !strings.Contains(r.stderr, "otlp-conv-sess-adk-mail-1") {
		t.Errorf("a refused request was stored\n%s", r)
	}
	if code := post("Bearer t0ken-for-test-16"); code != http.StatusOK {
		t.Fatalf("POST with the token: %d", code)
	}
	has(t, ok(t, db, "show", "otlp-conv-sess-adk-mail-1"), "send_email")
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}

// The two receivers on one address are refused before anything starts,
// but port 0 twice asks for two free ports, and the banner names both.
func TestCLIServeOTLPPorts(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	want := "retrylab: --otlp and --otlp-grpc both on 127.0.0.1:4318: give each its own port (4318 and 4317)"
	if msg := fails(t, 2, db, "serve", "--otlp", "127.0.0.1:4318", "--otlp-grpc", "127.0.0.1:4318"); msg != want {
		t.Errorf("both on 4318: %q, want %q", msg, want)
	}
	serve := background(t, db, "serve", "--otlp", "127.0.0.1:0", "--otlp-grpc", "127.0.0.1:0")
	serve.banner(t)
	m := regexp.MustCompile(`(?m)^  OTLP      POST http://127\.0\.0\.1:(\d+)/v1/traces .*\n  OTLP      gRPC 127\.0\.0\.1:(\d+) `).FindStringSubmatch(serve.stdout.String())
	if m == nil || m[1] == m[2] {
		t.Errorf("serve's banner names two ports:\n%s", serve.stdout.String())
	}
	if s := serve.stop(t); s.code != 0 {
		t.Errorf("serve\n%s", s)
	}
}
