package cli

import "testing"

// A host closing while another explorer is attached and idle waits until
// that one quits: its line says so, and how to stop waiting, where the
// newcomer who closed the first explorer reads it (docs/cli.md).
func TestWaitLineSaysHowToStopWaiting(t *testing.T) {
	for _, c := range []struct {
		running []string
		holds   int
		want    string
	}{
		{nil, 1, "retrylab: another retrylab works on r.db through this process (1 attached); waiting for it to end or quit before closing (quit the other retrylab, or Ctrl-C closes now and cuts its work short)"},
		{[]string{"exec_7K2Q"}, 1, "retrylab: another retrylab works on r.db through this process (running exec_7K2Q); waiting for it before closing (Ctrl-C closes now and kills its runs)"},
		{[]string{"exec_7K2Q", "exec_525C"}, 0, "retrylab: this process's runs on r.db are not over (running exec_7K2Q, exec_525C); waiting for them before closing (Ctrl-C closes now and kills them)"},
	} {
		got := waitLine("r.db", c.running, c.holds)
		if got != c.want {
			t.Errorf("waitLine(%v, %d):\n got %s\nwant %s", c.running, c.holds, got, c.want)
		}
	}
}
