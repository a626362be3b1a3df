package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dev serves until told to stop, saying where; bad flags get one line.
func TestDev(t *testing.T) {
	var out, errOut syncBuf
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		done <- run([]string{"dev", "--addr", "127.0.0.1:0", "--namespace", "agents"}, &out, &errOut, stop)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "press Ctrl-C to stop") {
		if time.Now().After(deadline) {
			t.Fatalf("no start line: %q %q", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	if code := <-done; code != 0 || !strings.Contains(out.String(), "namespaces [agents], state in memory") || !strings.Contains(out.String(), "stopped") {
		t.Errorf("exit %d, out %q, err %q", code, out.String(), errOut.String())
	}

	var o2, e2 syncBuf
	if code := run([]string{"dev", "--addr", "0.0.0.0:7233"}, &o2, &e2, nil); code != 1 ||
		strings.Count(e2.String(), "\n") != 1 || !strings.Contains(e2.String(), "loopback address only") {
		t.Errorf("exit %d, err %q", code, e2.String())
	}
}
