package cli

// The workshop room: 'room' hosts one on --db, 'room status' reads it,
// 'join' and 'leave' make --db a participant's database or not.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/room"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

// roomCompanion mirrors a host on the database at dbPath to the room it
// joined, if any (engine.Config.Companion).
func (a *app) roomCompanion(dbPath string) func(*engine.Host) engine.CompanionHooks {
	return room.Companion(room.MembershipFile(dbPath), room.MirrorOptions{Warn: a.roomWarning(dbPath)})
}

// roomWarning says on stderr, in one line, that the room --db joined did
// not get this command's runs (down, moved, or refusing the token).
func (a *app) roomWarning(dbPath string) func(string) {
	return func(problem string) {
		fmt.Fprintf(a.errOut, "room: %s ('retrylab --db %s room status' checks it)\n", problem, dbPath)
	}
}

// lessonRoomCompanion mirrors the lessons' host of the database at dbPath
// to the room it joined, its executions under "lesson:".
func (a *app) lessonRoomCompanion(dbPath string) func(*engine.Host) engine.CompanionHooks {
	return room.Companion(room.MembershipFile(dbPath), room.MirrorOptions{Namespace: "lesson", Warn: a.roomWarning(dbPath)})
}

func (a *app) roomCommands() []*cobra.Command {
	return []*cobra.Command{a.roomCmd(), a.joinCmd(), a.leaveCmd()}
}

func (a *app) roomCmd() *cobra.Command {
	var listen, code string
	var presenter, newCode bool
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Host a workshop room: every participant's runs, live, on one screen",
		Long: `Host a room on --db. Participants join it with 'retrylab join' and the code
it prints; from then on their runs, resumes, lessons and predictions are
mirrored to it as they happen ('retrylab room status' shows them).

It listens on 127.0.0.1 unless --listen names another address, and always
requires the join code (one is generated unless --code gives it). Started
again on the same --db, it comes back at its last address (when that is
free) with its last code, so participants who joined find it again:
--listen, --code or --new-code ask for another. The
room's API is under /v1/room/ on that address; participants' own agents use
its mail API (POST /v1/room/mail/v1/send) and CRM (/v1/room/crm/v1/records)
with the token 'join' prints. The teacher's control API stays on loopback.

In a terminal it opens the explorer in its room view: one row per
participant, live, the class tally under them (P: the explorer, s: the
selection as a slide); q closes the room. Elsewhere it runs headless: stop
it with Ctrl-C.`,
		Example: "  retrylab room\n  retrylab room --listen 0.0.0.0:7420 --code K7QX-3M9P",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if newCode && code != "" {
				return usageError("room: --code and --new-code ask for different codes: give one")
			}
			want := roomPlace{listen: listen, code: code, newCode: newCode, keepListen: !cmd.Flags().Changed("listen")}
			return a.hostRoom(want, presenter)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the room's `address` (loopback unless this names another; default: the room's last address on --db)")
	cmd.Flags().BoolVar(&newCode, "new-code", false, "generate a new join code rather than keep the room's last one")
	cmd.Flags().BoolVar(&presenter, "presenter", false, "high-contrast theme, for projectors (in a terminal)")
	cmd.Flags().StringVar(&code, "code", "", "the join `code` (default: the room's last one on --db, else a new one, two groups of four letters and digits)")
	cmd.AddCommand(a.roomStatusCmd())
	return cmd
}

// minCode is the fewest letters and digits a --code may have.
const minCode = 6

// roomPlace is where the teacher asked the room to be and with which
// code; keepListen: --listen was not given.
type roomPlace struct {
	listen, code        string
	newCode, keepListen bool
}

// checkCode refuses a --code too short to keep strangers out.
func checkCode(code string) error {
	n := len(strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, code))
	if code != "" && n < minCode {
		return &exitError{code: 2, msg: fmt.Sprintf("--code %q is too short to keep strangers out: give at least %d letters and digits, or none for a generated one", code, minCode)}
	}
	return nil
}

// roomCode is the join code: --code, else the room's last (unless
// --new-code), else a new one.
func roomCode(want roomPlace, last room.Settings) (string, error) {
	switch {
	case want.code != "":
		return want.code, nil
	case !want.newCode && last.Code != "":
		return last.Code, nil
	}
	return room.NewCode()
}

// listenRoom listens where the room should: --listen, else its last
// address when that is free, else on that host at any port, which a line
// to out says; movedFrom is then the last address, for the room view to
// say too (the screen covers out's lines as it opens).
func listenRoom(out io.Writer, want roomPlace, last room.Settings) (ln net.Listener, movedFrom string, err error) {
	addr := want.listen
	if want.keepListen && last.Address != "" {
		ln, err := net.Listen("tcp", last.Address)
		if err == nil {
			return ln, "", nil
		}
		host, _, _ := net.SplitHostPort(last.Address)
		addr = net.JoinHostPort(host, "0")
		movedFrom = last.Address
		defer func() {
			fmt.Fprintf(out, "the room's last address %s is taken (%v): it moved; participants join again with the line below\n", last.Address, err)
		}()
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, "", &exitError{code: 1, msg: fmt.Sprintf("room: listen on %s: %v", addr, err)}
	}
	return ln, movedFrom, nil
}

func (a *app) hostRoom(want roomPlace, presenter bool) error {
	if err := checkCode(want.code); err != nil {
		return err
	}
	// The room's host: its collections outlive the resets of its world.
	h, err := engine.Open(engine.Config{DBPath: a.dbPath, Scenarios: fixtures.FS, Imports: a.imports, KeepOnReset: room.Buckets})
	if errors.Is(err, store.ErrLocked) {
		return &exitError{code: 1, msg: "the database " + a.dbPath + " is open in another retrylab: close it first, the room needs it to itself"}
	}
	if err != nil {
		return err
	}
	defer h.Close()
	// The teacher's control API (reset, clock, faults from another
	// terminal) is the host's, on loopback only, as for any command.
	ctl, err := control.Serve(h)
	if err != nil {
		return err
	}
	teacher, err := room.NewTeacherToken()
	if err != nil {
		return err
	}
	// A room started again on its database keeps its place and its code.
	last, _, err := room.LoadSettings(h.Store())
	if err != nil {
		return err
	}
	code, err := roomCode(want, last)
	if err != nil {
		return err
	}
	srv, err := room.NewServer(room.Config{Host: h, Services: h.Providers(), Code: code, TeacherToken: teacher})
	if err != nil {
		return err
	}
	ln, movedFrom, err := listenRoom(a.out, want, last)
	if err != nil {
		return err
	}
	if err := room.SaveSettings(h.Store(), room.Settings{Address: ln.Addr().String(), Code: code}); err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		<-done
	}()
	roomURL := "http://" + ln.Addr().String()
	tf := room.TeacherFile(a.dbPath)
	if err := room.SaveTeacher(tf, room.Teacher{URL: roomURL, Code: code, Token: teacher}); err != nil {
		return err
	}
	defer os.Remove(tf)
	fmt.Fprintf(a.out, "retrylab room on %s at %s (code %s)\n", h.Store().Path(), roomURL, code)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(a.out, "  listening beyond loopback, as --listen asked: anyone who reaches %s needs the code\n", ln.Addr())
	}
	join := fmt.Sprintf("retrylab join %s --code %s --name YOUR-NAME", roomURL, code)
	fmt.Fprintln(a.out, "participants type:")
	fmt.Fprintln(a.out, "  "+join)
	fmt.Fprintf(a.out, "see them with: retrylab room status --db %s\n", a.dbPath)
	if roomHasTerminal() {
		// In a terminal the room is on screen (the explorer's room view)
		// until the teacher quits it.
		if err := projectRoom(ctl, srv, h.Store().Path(), join, movedFrom, presenter); err != nil {
			return err
		}
		fmt.Fprintln(a.out, "room closed")
		return nil
	}
	fmt.Fprintln(a.out, "press Ctrl-C to stop")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	<-sigs
	fmt.Fprintln(a.out, "room closed")
	return nil
}

func (a *app) roomStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every participant of the room hosted on --db (or joined with it)",
		Long: `Read the status of the room hosted on --db, from the room itself (its
address and the teacher's token are in the file it writes beside the
database); on a participant's database, of the room it joined. One entry
per participant: its executions, its latest scenario and outcome, the mail
its runs and its agent had delivered, the duplicates among them, and its
predictions; then the class's tally of each lesson (who said what, and
what the run produced). --json gives the same: "participants" and
"lessons".`,
		Example: "  retrylab room status --db room.db --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.roomClient()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := c.Status(ctx)
			if err != nil {
				return &exitError{code: 1, msg: "room status: " + err.Error()}
			}
			if asJSON {
				enc := json.NewEncoder(a.out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return writeRoomStatus(a, c.URL, st)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// roomClient reaches the room of --db: the one it hosts (teacher), else
// the one it joined (participant).
func (a *app) roomClient() (*room.Client, error) {
	t, ok, err := room.LoadTeacher(room.TeacherFile(a.dbPath))
	if err != nil {
		return nil, err
	}
	if ok {
		return &room.Client{URL: t.URL, Token: t.Token}, nil
	}
	m, ok, err := room.LoadMembership(room.MembershipFile(a.dbPath))
	if err != nil {
		return nil, err
	}
	if ok {
		return &room.Client{URL: m.URL, Token: m.Token}, nil
	}
	return nil, &exitError{code: 1, msg: fmt.Sprintf("no room is hosted on %s, nor joined with it: start one with 'retrylab room --db %s', or join one with 'retrylab join URL --code CODE --name NAME'", a.dbPath, a.dbPath)}
}

func writeRoomStatus(a *app, roomURL string, st room.Status) error {
	fmt.Fprintf(a.out, "room %s: %d participant(s)\n", roomURL, len(st.Participants))
	if len(st.Participants) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	// SCENARIO to DUPLICATES are the latest run's, as the teacher's row
	// says them; ALL RUNS is the mail of every run.
	fmt.Fprintln(tw, "NAME\tEXECUTIONS\tSCENARIO\tOUTCOME\tOUTBOX\tDUPLICATES\tALL RUNS\tPREDICTIONS")
	for _, p := range st.Participants {
		name := p.Name
		if p.Left {
			name += " (left)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s, %d dup\t%d/%d right\n", name, p.Executions, dash(p.Scenario), dash(p.Outcome),
			p.LatestOutbox, p.LatestDuplicates, plural.Count(p.Outbox, "message"), p.Duplicates, p.Predictions.Right, p.Predictions.Asked)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range st.Lessons {
		fmt.Fprintln(a.out, "lesson "+l.Summary())
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) joinCmd() *cobra.Command {
	var code, name string
	cmd := &cobra.Command{
		Use:   "join URL",
		Short: "Join a workshop room: this database's runs are mirrored to it",
		Long: `Join the room at URL with its code, under a name, and remember it beside
--db: from then on this database's runs, resumes, lessons and predictions
are mirrored to the room as they happen, while they still run and are
recorded here (without the room, they are sent when it is back). It prints
the participant token your own agent uses with the room's mail API and CRM.
'retrylab leave' forgets the room.`,
		Example: "  retrylab join http://127.0.0.1:7420 --code K7QX-3M9P --name ada",
		Args:    exactArgs(1, "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := url.Parse(args[0])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageError(fmt.Sprintf("join: %q is not a room's address (http://HOST:PORT)", args[0]))
			}
			if code == "" || strings.TrimSpace(name) == "" {
				return usageError("join needs --code CODE and --name NAME")
			}
			roomURL := strings.TrimRight(u.String(), "/")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := &room.Client{URL: roomURL}
			prev := a.tokenFor(u, name)
			resp, err := c.Rejoin(ctx, code, name, prev)
			if errors.Is(err, room.ErrWrongCode) {
				return &exitError{code: 1, msg: fmt.Sprintf("join: the room at %s refused the code %q: ask the teacher for it again", roomURL, code)}
			}
			if err != nil {
				return &exitError{code: 1, msg: "join: " + err.Error()}
			}
			m := room.Membership{URL: roomURL, Name: resp.Name, Participant: resp.Participant, Token: resp.Token}
			if err := room.SaveMembership(room.MembershipFile(a.dbPath), m); err != nil {
				return err
			}
			if prev != "" && resp.Token == prev {
				fmt.Fprintf(a.out, "joined the room at %s again as %s: your place and your token are as before\n", roomURL, resp.Name)
			} else {
				fmt.Fprintf(a.out, "joined the room at %s as %s: the runs of %s are mirrored there from now on\n", roomURL, resp.Name, a.dbPath)
			}
			fmt.Fprintf(a.out, "your agent's token (bearer): %s\n", resp.Token)
			fmt.Fprintf(a.out, "  mail API  POST %s/v1/room/mail/v1/send\n", roomURL)
			fmt.Fprintf(a.out, "  CRM       %s/v1/room/crm/v1/records\n", roomURL)
			return nil
		},
	}
	cmd.Flags().StringVar(&code, "code", "", "the room's join `code`")
	cmd.Flags().StringVar(&name, "name", "", "your `name` in the room")
	return cmd
}

// tokenFor is the token --db was given when it joined the room at u
// under name, if it did: a join again sends it, so the room gives the
// participant its place back. It goes only to the host it came from (the
// room may have come back on another port).
func (a *app) tokenFor(u *url.URL, name string) string {
	m, ok, err := room.LoadMembership(room.MembershipFile(a.dbPath))
	if err != nil || !ok || !strings.EqualFold(m.Name, room.SanitiseName(name)) {
		return ""
	}
	was, err := url.Parse(m.URL)
	if err != nil || was.Scheme != u.Scheme || was.Hostname() != u.Hostname() {
		return ""
	}
	return m.Token
}

func (a *app) leaveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "leave",
		Short: "Leave the room this database joined: its runs stay here only",
		Long: `Tell the room this database joined that its participant left (the room's
row says so, and the name is free to join again under: 'retrylab join' with
the code gives the place back), and forget the room: runs stay here only.
When the room cannot be reached, it is forgotten all the same.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file := room.MembershipFile(a.dbPath)
			m, ok, err := room.LoadMembership(file)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(a.out, "%s has joined no room\n", a.dbPath)
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			told := (&room.Client{URL: m.URL, Token: m.Token}).Leave(ctx)
			if _, err := room.Forget(file); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "left the room: the runs of %s stay here only\n", a.dbPath)
			if told != nil {
				fmt.Fprintf(a.errOut, "the room was not told (%s): your row there does not say you left\n", oneLine(told.Error()))
			}
			return nil
		},
	}
}
