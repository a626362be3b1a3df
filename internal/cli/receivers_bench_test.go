package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"

	"github.com/retrylab/retrylab/internal/cputime"
)

// receiverBatch and receiverExporters are the load: batches of 512
// spans from 8 exporters at once, as BatchSpanProcessors send them.
const receiverBatch, receiverExporters = 512, 8

// BenchmarkServeReceivers measures the durable receivers as a user runs
// them: the real binary's `serve --otlp --otlp-grpc` on a fresh database,
// 8 exporters in a process of their own (loadgenMain), each on its own
// connection, sending agent-shaped batches of 512 spans (protobuf; each
// batch 64 new traces of 8 spans, agentTraces), one sub-benchmark per
// protocol, side by side in one run. An answer means the spans are on disk
// (fsynced). It reports durable spans/s, the serve process's peak RSS
// (VmHWM) and CPU a span (which a busy machine changes less than the
// throughput), and, with an explorer attached to the same database in a
// pseudo-terminal, the key→screen latency of keys pressed every 50 ms
// while the spans arrive (p50, p99; keys that changed nothing in 300 ms
// are counted apart) and the explorer's share of a core meanwhile. b.N is
// batches: -benchtime 200x is 102 400 spans.
// With RETRYLAB_BENCH_PEER set (peerEnv), a third sub-benchmark sends the
// same load to a peer receiver in the same run.
func BenchmarkServeReceivers(b *testing.B) {
	for _, proto := range []string{"http", "grpc"} {
		b.Run(proto, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "recv.db")
			srv := startServe(b, db)
			reads := make(chan time.Time, 4096)
			s := startScreenTimed(b, reads, bin, db, 160, 48)
			s.waitFor("the explorer", "Executions")
			// j and k in the executions list, which the spans fill: in the
			// trace (the focus at start) the list's first row follows the
			// newest execution as the spans arrive, each new trace shown
			// from its top, where k changes nothing and the next frame
			// came only with the list's next refresh.
			s.press("\x1b[Z") // shift+tab
			target := srv.httpURL
			if proto == "grpc" {
				target = srv.grpcAddr
			}
			gen := startLoadgen(b, proto, target, b.N)

			var keys keyLatencies
			stopKeys := make(chan struct{})
			keysDone := make(chan struct{})
			go func() {
				defer close(keysDone)
				keys.pressWhile(s, reads, stopKeys)
			}()
			cpu0, ecpu0, host0 := processCPU(b, srv.cmd.Process.Pid), processCPU(b, s.cmd.Process.Pid), cputime.Host()
			b.ResetTimer()
			elapsed, err := gen.run()
			cpu := processCPU(b, srv.cmd.Process.Pid) - cpu0
			ecpu := processCPU(b, s.cmd.Process.Pid) - ecpu0
			host1 := cputime.Host()
			steal, idle := host0.StealPercent(host1), host0.IdlePercent(host1)
			b.StopTimer()
			close(stopKeys)
			<-keysDone
			if err != nil {
				b.Fatal(err)
			}
			rss, explorerRSS := peakRSS(b, srv.cmd.Process.Pid), peakRSS(b, s.cmd.Process.Pid)
			s.press("q")
			<-s.done
			srv.stop(b)

			b.ReportMetric(float64(b.N*receiverBatch)/elapsed.Seconds(), "durable-spans/s")
			b.ReportMetric(float64(rss)/1024, "serve-peak-RSS-MB")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*receiverBatch), "serve-CPU-µs/span")
			b.ReportMetric(100*ecpu.Seconds()/elapsed.Seconds(), "explorer-CPU-%")
			b.ReportMetric(float64(explorerRSS)/1024, "explorer-peak-RSS-MB")
			b.ReportMetric(steal, "host-steal-%")
			b.ReportMetric(idle, "host-idle-%")
			keys.report(b)
		})
	}
	if peer := os.Getenv(peerEnv); peer != "" {
		b.Run("peer", func(b *testing.B) { benchPeer(b, peer) })
	}
}

// peerEnv names a peer receiver to run the same load against, side by
// side with retrylab's in one run: a command line in which {port} stands
// for a free loopback port it is to take OTLP/HTTP on, at /v1/traces, and
// {port2} for another (its gRPC's, say), e.g. "/tmp/otel-tui --host
// 127.0.0.1 --http {port} --grpc {port2}" (otel-tui, an OTLP receiver
// beside a TUI that keeps spans in memory only). It runs in a
// pseudo-terminal of 160x48, as a user runs it.
const peerEnv = "RETRYLAB_BENCH_PEER"

// benchPeer sends BenchmarkServeReceivers' load over HTTP to the peer that
// command starts, and reports its spans/s (answered, not durable), its
// peak RSS and CPU a span.
func benchPeer(b *testing.B, command string) {
	port := freePorts(b, 2)
	command = strings.ReplaceAll(command, "{port}", strconv.Itoa(port))
	command = strings.ReplaceAll(command, "{port2}", strconv.Itoa(port+1))
	args := strings.Fields(command)
	s := startScreen(b, args[0], filepath.Join(b.TempDir(), "unused.db"), 160, 48, args[1:]...)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the peer (%s) took no connection on %s in 30s:\n%s", command, addr, s.text())
		}
	}
	gen := startLoadgen(b, "http", "http://"+addr+"/v1/traces", b.N)
	pid := s.cmd.Process.Pid
	cpu0, host0 := processCPU(b, pid), cputime.Host()
	b.ResetTimer()
	elapsed, err := gen.run()
	cpu := processCPU(b, pid) - cpu0
	host1 := cputime.Host()
	steal, idle := host0.StealPercent(host1), host0.IdlePercent(host1)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rss := peakRSS(b, pid)
	b.ReportMetric(float64(b.N*receiverBatch)/elapsed.Seconds(), "memory-spans/s")
	b.ReportMetric(float64(rss)/1024, "peer-peak-RSS-MB")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*receiverBatch), "peer-CPU-µs/span")
	b.ReportMetric(steal, "host-steal-%")
	b.ReportMetric(idle, "host-idle-%")
}

// The exporters run in a process of their own (this test binary again,
// loadgenEnv set), as agents' exporters run beside the receiver, not in
// the terminal that times the keys: in the benchmark's process they took
// the goroutines' turns from the reader of the explorer's screen.
const (
	loadgenEnv   = "RETRYLAB_BENCH_LOADGEN"        // http or grpc
	loadgenTo    = "RETRYLAB_BENCH_LOADGEN_TARGET" // the receiver's URL or address
	loadgenCount = "RETRYLAB_BENCH_LOADGEN_BATCHES"
)

// loadgen is a process of exporters, their batches made, waiting to send.
type loadgen struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startLoadgen starts the exporters' process for n batches to target and
// waits until it has made them.
func startLoadgen(tb testing.TB, proto, target string, n int) *loadgen {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), loadgenEnv+"="+proto, loadgenTo+"="+target, loadgenCount+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	g := &loadgen{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	if line, err := g.out.ReadString('\n'); err != nil || line != "ready\n" {
		tb.Fatalf("the exporters' process: %q, %v", line, err)
	}
	return g
}

// run sends every batch and says how long the sends took, as the
// exporters' process timed them.
func (g *loadgen) run() (time.Duration, error) {
	if _, err := io.WriteString(g.in, "go\n"); err != nil {
		return 0, err
	}
	line, err := g.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("the exporters' process: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the exporters' process: %s", strings.TrimSpace(line))
	}
	return time.Duration(ns), nil
}

// loadgenMain is the exporters' process: it makes the batches (each 64
// new traces of 8 spans, agentTraces), says "ready", and on "go" sends
// them from receiverExporters goroutines, then prints the nanoseconds the
// sends took, or the first error.
func loadgenMain(proto string) int {
	n, _ := strconv.Atoi(os.Getenv(loadgenCount))
	bodies := make([][]byte, n)
	for i := range bodies {
		req := ptraceotlp.NewExportRequestFromTraces(agentTraces(i*receiverBatch/8, receiverBatch/8))
		var err error
		if bodies[i], err = req.MarshalProto(); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	// Each exporter has its own connection, as each agent's SDK does.
	target := os.Getenv(loadgenTo)
	senders := make([]func([]byte) error, receiverExporters)
	for i := range senders {
		newSender := httpSender
		if proto == "grpc" {
			newSender = grpcSender
		}
		send, done, err := newSender(target)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer done()
		senders[i] = send
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 1
	}
	var next atomic.Int64
	var failed atomic.Value
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, send := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) {
					return
				}
				if err := send(bodies[i]); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err, _ := failed.Load().(error); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println(elapsed.Nanoseconds())
	return 0
}

// served is a `retrylab serve` with both OTLP receivers on free ports.
type served struct {
	cmd      *exec.Cmd
	httpURL  string
	grpcAddr string
	done     chan struct{}
}

var otlpBanner = regexp.MustCompile(`(?m)^  OTLP      POST (http://127\.0\.0\.1:\d+/v1/traces) .*\n  OTLP      gRPC (127\.0\.0\.1:\d+) `)

func startServe(tb testing.TB, db string) *served {
	tb.Helper()
	cmd := exec.Command(bin, "--db", db, "serve", "--otlp", "127.0.0.1:0", "--otlp-grpc", "127.0.0.1:0")
	cmd.Dir, cmd.Env, cmd.Stderr = filepath.Dir(db), cliEnv(), os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan struct{})}
	banner := make(chan []string, 1)
	go func() {
		var text strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			text.WriteString(sc.Text() + "\n")
			if m := otlpBanner.FindStringSubmatch(text.String()); m != nil {
				banner <- m
				break
			}
		}
		for sc.Scan() { // what the host says later: read, so it never blocks
		}
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	tb.Cleanup(func() { _ = cmd.Process.Kill(); <-s.done })
	select {
	case m := <-banner:
		s.httpURL, s.grpcAddr = m[1], m[2]
	case <-s.done:
		tb.Fatal("serve ended before its banner")
	case <-time.After(30 * time.Second):
		tb.Fatal("serve printed no banner in 30 s")
	}
	return s
}

// httpSender posts a protobuf ExportTraceServiceRequest to url, on a
// connection of its own, and wants a 200; done closes it.
func httpSender(url string) (send func([]byte) error, done func(), err error) {
	client := &http.Client{Transport: &http.Transport{}}
	return func(body []byte) error {
		resp, err := client.Post(url, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("OTLP/HTTP answered %d", resp.StatusCode)
		}
		return nil
	}, client.CloseIdleConnections, nil
}

// grpcSender calls TraceService/Export at addr, as the SDKs' gRPC
// exporters do, on a connection of its own. It sends the request's
// protobuf bytes as they are, as httpSender posts them, so both protocols
// cost the client the same.
func grpcSender(addr string) (send func([]byte) error, done func(), err error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawProto{})))
	if err != nil {
		return nil, nil, err
	}
	return func(body []byte) error {
		var reply []byte
		return conn.Invoke(context.Background(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &body, &reply)
	}, func() { conn.Close() }, nil
}

// rawProto is a gRPC codec that sends a message's bytes as they are.
type rawProto struct{}

func (rawProto) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawProto) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawProto) Name() string { return "proto" }

// stop interrupts serve and waits for it.
func (s *served) stop(tb testing.TB) {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		tb.Fatal("serve did not stop in 30 s")
	}
}

// peakRSS is a process's peak resident set (VmHWM), in KiB.
func peakRSS(tb testing.TB, pid int) int {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb
		}
	}
	tb.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// keyLatencies are key→screen times measured while something else runs.
type keyLatencies struct {
	lat       []time.Duration
	unchanged int
}

// pressWhile presses j and k in turn every 50 ms until stop, timing each
// key from its write to the first output after it. Output that comes
// without a key (the list growing as spans arrive) is drained first.
//
// The keys start once the list holds two executions: before, j and k have
// nowhere to move, the key's frame is the one before it and Bubble Tea
// writes nothing, and the first output after the key is the list's next
// refresh, up to its notice window later (tui.MaxNoticeWindow). Timed
// that way, the first key or two of each run had "latencies" of 18-66 ms
// that no key took (a log of the explorer's frames showed them unchanged).
func (k *keyLatencies) pressWhile(s *screen, reads chan time.Time, stop chan struct{}) {
	for listed(s) < 2 {
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		for drained := false; !drained; {
			select {
			case <-reads:
			default:
				drained = true
			}
		}
		start := time.Now()
		s.press([]string{"j", "k"}[i%2])
		select {
		case at := <-reads:
			k.lat = append(k.lat, at.Sub(start))
		case <-time.After(300 * time.Millisecond):
			k.unchanged++
		}
	}
}

// executionsTitle is the executions pane's title: its count of executions.
var executionsTitle = regexp.MustCompile(`Executions (\d+)`)

// listed is how many executions the explorer's list says it holds.
func listed(s *screen) int {
	m := executionsTitle.FindStringSubmatch(s.text())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func (k *keyLatencies) report(b *testing.B) {
	reportLatencies(b, "key-", k.lat)
	b.ReportMetric(float64(len(k.lat)), "keys")
	b.ReportMetric(float64(k.unchanged), "unchanged-keys")
}
