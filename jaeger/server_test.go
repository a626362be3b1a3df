package jaeger

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/retrylab/retrylab/internal/freeport"
)

// server is a Jaeger all-in-one this test started: spans go to its OTLP
// receiver (HTTP), traces come from its query API.
type server struct {
	OTLP  string // host:port of the OTLP/HTTP receiver
	Query string // http://host:port of the query API and UI
}

// readyWithin bounds the wait for a started Jaeger to answer.
const readyWithin = 2 * time.Minute

// config is the collector configuration of an all-in-one with in-memory
// storage, after the one Jaeger v1.76.0 embeds
// (cmd/jaeger/internal/all-in-one.yaml) trimmed to what the test uses: the
// OTLP receiver over HTTP, the batch processor, the storage, the query
// extension; each on a loopback port of its own, and no telemetry ports.
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn

extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000

receivers:
  otlp:
    protocols:
      http:
        endpoint: %s

processors:
  batch:

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// startJaeger starts Jaeger's own binary with config on free loopback
// ports and waits until its query API and OTLP receiver answer. It is
// stopped when the test ends; its log is in the test's output if the test
// failed.
func startJaeger(t *testing.T) server {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 3)
	s := server{OTLP: ports[0], Query: "http://" + ports[1]}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[1], ports[2], ports[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(jaegerBin, "--config", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Jaeger: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("Jaeger's log:\n%s", log.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyWithin)
	for {
		select {
		case err := <-exited:
			t.Fatalf("Jaeger exited before it was ready: %v\n%s", err, log.String())
		default:
		}
		if answers(client, s.Query+"/api/services") && answers(client, "http://"+s.OTLP+"/v1/traces") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger not ready within %v\n%s", readyWithin, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answers reports whether url answers an HTTP request at all: the OTLP
// receiver refuses a GET (405), and that is an answer.
func answers(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode < 500
}

// freePorts are n loopback addresses free when asked, below the kernel's
// ephemeral range (freeport): Jaeger binds them later itself.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		port, err := freeport.Port("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return out
}
