package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/fixtures"
)

// BenchmarkRoomLoad runs the room as a workshop loads it: the teacher's
// 'retrylab room' in a pseudo-terminal (its room view), and participants
// (2 by default, CI's one-iteration smoke run; RETRYLAB_ROOM_BENCH_N=40
// is a workshop's load: see BENCHMARKS.md) each joined from its own
// database and running the first two lessons at once
// ('lesson --answers 2,2 --quiet'). While they run, j and k go to the room
// view: it reports the key→screen p50 and p99 (first output after a key;
// the view's own redraws between keys are drained before each), and a
// participant's run time (median, max) over the same run alone, and over
// the same n lessons run at once on databases that joined no room, the
// projector open (room-median-x, room-max-x: what the room costs a
// participant, the machine's load aside; no-room-key-p99-ms: the
// projector's p99 under that load alone). It fails unless, as soon as the
// last participant exited, the room holds every participant's two
// executions and every outbox right (4 messages, 2 of them duplicates:
// naive and crash each deliver the invoice twice) and both predictions,
// and every event of each participant's lessons' database as the
// participant recorded it (lost-events, 0).
func BenchmarkRoomLoad(b *testing.B) {
	n := 2
	if v, err := strconv.Atoi(os.Getenv("RETRYLAB_ROOM_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	// RETRYLAB_ROOM_BENCH_NICE=19 runs the participants at that nice value:
	// in a workshop they run on their own laptops, and on one 2-core machine
	// a nice of 19 gives them the CPU the room and the projector leave, so
	// the projector's latency is what the room's load costs it.
	nice, _ := strconv.Atoi(os.Getenv("RETRYLAB_ROOM_BENCH_NICE"))
	dir := b.TempDir()
	lessonRun := func(db string) (time.Duration, error) {
		start := time.Now()
		cmd := exec.Command(bin, "--db", db, "lesson", "--answers", "2,2", "--quiet")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if nice != 0 {
			// A session of its own: where Linux groups the processes of a
			// session (autogroup, on by default), a nice value ranks a
			// process only within its session's group, so the group's
			// nice is set too (its workers, in the same session, share it).
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		if nice != 0 { // before it starts its workers: they inherit it
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, nice)
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", cmd.Process.Pid), []byte(strconv.Itoa(nice)), 0)
		}
		if err := cmd.Wait(); err != nil {
			return 0, fmt.Errorf("%v\n%s", err, out.Bytes())
		}
		return time.Since(start), nil
	}
	alone, err := lessonRun(filepath.Join(dir, "alone.db"))
	if err != nil {
		b.Fatal(err)
	}

	roomDB := filepath.Join(dir, "room.db")
	reads := make(chan time.Time, 4096)
	s := startScreenTimed(b, reads, bin, roomDB, 160, 48, "room", "--code", "K7QX-3M9P")
	s.waitFor("the empty room", "Room · 0 participants")
	m := regexp.MustCompile(`retrylab join (http://127\.0\.0\.1:\d+) --code`).FindStringSubmatch(s.text())
	if m == nil {
		b.Fatalf("no join line:\n%s", s.text())
	}
	drain := func(d time.Duration) {
		for {
			select {
			case <-reads:
			case <-time.After(d):
				return
			}
		}
	}
	// together runs a lesson on each of dbs at once, pressing j and k in
	// the room view until they are done: the run times, sorted, and the
	// key→screen latencies, sorted.
	together := func(dbs []string) (times, lat []time.Duration) {
		times = make([]time.Duration, len(dbs))
		errs := make([]error, len(dbs))
		var wg sync.WaitGroup
		for i := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				times[i], errs[i] = lessonRun(dbs[i])
			}()
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		for k := 0; ; k++ {
			select {
			case <-finished:
			default:
				drain(5 * time.Millisecond)
				start := time.Now()
				s.press([]string{"j", "k"}[k%2])
				select {
				case at := <-reads:
					lat = append(lat, at.Sub(start))
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
			break
		}
		for i, err := range errs {
			if err != nil {
				b.Fatalf("participant %d: %v", i, err)
			}
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return times, lat
	}
	names := func(prefix string) []string {
		dbs := make([]string, n)
		for i := range dbs {
			dbs[i] = filepath.Join(dir, fmt.Sprintf("%s%02d.db", prefix, i))
		}
		return dbs
	}
	dbs := names("p")
	for i := range dbs {
		if out, err := exec.Command(bin, "--db", dbs[i], "join", m[1], "--code", "K7QX-3M9P", "--name", fmt.Sprintf("p%02d", i)).CombinedOutput(); err != nil {
			b.Fatalf("join: %v\n%s", err, out)
		}
	}
	s.waitFor("the participants", fmt.Sprintf("Room · %d participants", n))
	// First the same n lessons on databases that joined no room, the
	// projector open on the participants not yet running: the machine's
	// share of a participant's time and of the projector's, which the
	// room's are measured against.
	drain(300 * time.Millisecond)
	noRoom, baseLat := together(names("roomless"))
	drain(300 * time.Millisecond)
	b.ResetTimer()
	times, lat := together(dbs)
	b.StopTimer()

	// Every participant's runs are in the room once the last lesson has
	// exited: each mirror sends what is left before its process exits (no
	// grace period: what a mirror left unsent would reach the room only at
	// that participant's next command).
	var st roomStatus
	out, err := exec.Command(bin, "--db", roomDB, "room", "status", "--json").Output()
	if err != nil || json.Unmarshal(out, &st) != nil || !allIn(st, n) {
		b.Fatalf("the room does not hold every participant's two runs as the last lesson exits (%v):\n%s", err, out)
	}
	// 0 lost events: what each participant's lessons' database holds (the
	// last lesson's run: each lesson starts from a clean slate) is what
	// the room holds of it, event for event.
	lost := 0
	for _, db := range dbs {
		lost += lostEvents(b, db)
	}
	if lost > 0 {
		b.Fatalf("%d events in the participants' databases are not in the room", lost)
	}
	// The projector's tally of the lesson at hand (the selected
	// participant's last: crash, where every one said 2).
	s.waitFor("the lesson's tally", fmt.Sprintf("lesson crash: %d of %d right; %d said 2; it was 2", n, n, n))
	s.press("q")
	<-s.done

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// RETRYLAB_ROOM_BENCH_LATENCIES=FILE appends each key's latency (µs, a
	// line each), so that the runs of -count can be pooled: one run's p99
	// is its third-slowest key of about 300.
	if f := os.Getenv("RETRYLAB_ROOM_BENCH_LATENCIES"); f != "" {
		var text strings.Builder
		for _, d := range lat {
			fmt.Fprintln(&text, d.Microseconds())
		}
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fh.WriteString(text.String())
			err = errors.Join(err, fh.Close())
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if len(lat) > 0 {
		b.ReportMetric(quantileMS(lat, 0.50), "key-p50-ms")
		b.ReportMetric(quantileMS(lat, 0.99), "key-p99-ms")
	}
	if len(baseLat) > 0 {
		b.ReportMetric(quantileMS(baseLat, 0.99), "no-room-key-p99-ms")
	}
	b.ReportMetric(float64(len(lat)), "keys")
	b.ReportMetric(float64(lost), "lost-events")
	b.ReportMetric(ms(alone), "alone-ms")
	b.ReportMetric(float64(times[n/2])/float64(alone), "run-median-x")
	b.ReportMetric(float64(times[n-1])/float64(alone), "run-max-x")
	b.ReportMetric(ms(noRoom[n/2]), "no-room-median-ms")
	b.ReportMetric(float64(times[n/2])/float64(noRoom[n/2]), "room-median-x")
	b.ReportMetric(float64(times[n-1])/float64(noRoom[n-1]), "room-max-x")
}

// allIn says the room holds n participants, each with the first two
// lessons' runs: two executions, 4 messages of which 2 duplicates, and
// both predictions (2, 2) right.
func allIn(st roomStatus, n int) bool {
	if len(st.Participants) != n {
		return false
	}
	for _, p := range st.Participants {
		if p.Executions != 2 || p.Outbox != 4 || p.Duplicates != 2 || p.Predictions.Right != 2 || p.Predictions.Asked != 2 {
			return false
		}
	}
	return true
}

// lostEvents is how many of the events in the lessons' database beside db
// the room it joined does not hold as the participant recorded them (read
// with the participant's token; the room keeps the lessons' runs under
// "lesson:").
func lostEvents(b *testing.B, db string) int {
	b.Helper()
	m, ok, err := room.LoadMembership(room.MembershipFile(db))
	if err != nil || !ok {
		b.Fatalf("%s joined no room: %v", db, err)
	}
	h, err := engine.Open(engine.Config{DBPath: lesson.DBPath(db), Scenarios: fixtures.FS})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	xs, _, err := h.Executions(0, 0)
	if err != nil || len(xs) == 0 {
		b.Fatalf("%s: the lessons' runs: %d, %v", db, len(xs), err)
	}
	lost := 0
	for _, x := range xs {
		local, err := h.Events(x.ID, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, m.URL+"/v1/room/events?execution=lesson:"+x.ID, nil)
		req.Header.Set("Authorization", "Bearer "+m.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var got struct {
			Events []json.RawMessage `json:"events"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		held := map[string]bool{}
		for _, raw := range got.Events {
			held[string(raw)] = true
		}
		for _, ev := range local {
			data, err := json.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			if !held[string(data)] {
				lost++
			}
		}
	}
	return lost
}
