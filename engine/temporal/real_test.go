package temporal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/retrylab/retrylab/engine/temporal"
)

// realFile finds a recording of a real tool in the shared folder beside
// the repository (or a worktree of it), or where RETRYLAB_REAL_TRACES
// says; the tests that read them skip where it is absent.
func realFile(t *testing.T, name string) string {
	t.Helper()
	dirs := []string{"../../../shared/real-traces", "../../../../shared/real-traces"}
	if d := os.Getenv("RETRYLAB_REAL_TRACES"); d != "" {
		dirs = []string{d}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s is not here (RETRYLAB_REAL_TRACES)", name)
	return ""
}

// The TypeScript SDK's smorgasbord history (CLI shape): two activities on
// attempt 1, a local activity (Core's marker), a child workflow, a timer,
// signals both ways, a run continued from another.
func TestRealSmorgasbord(t *testing.T) {
	tr := foldFile(t, realFile(t, "temporal-smorgasbord.json"))
	want := `run 1 ✓ [run1]
   noted continued as new from run 7889adaa-84a1-4f17-bece-3acb327d213f [note2]
  turn 1 workflow task: workflow started [run1/turn1]
     noted timer 1 started (1s) [note4]
    call 1 fakeProgress [100,10] [run1/1]
      ✓ #1 ok 1.016509s [event 33]
    call 2 queryOwnWf {"type":"query","name":"step"} [run1/2]
      ✓ #1 ok 15.828ms [event 23]
    call child:4951fb36-36e1-414c-a359-ae6f70541afe signalTarget  [run1/child:4951fb36-36e1-414c-a359-ae6f70541afe]
      ✓ #1 ok 15.769ms [event 10]
    call local:3 echo  [run1/local:3]
      ✓ #1 ok [event 9]
  turn 2 workflow task [run1/turn2]
     noted signal unblock sent to 4951fb36-36e1-414c-a359-ae6f70541afe [note13]
     noted signal activityStarted received [note14]
  turn 3 workflow task: signal activityStarted [run1/turn3]
     noted signal delivered to 4951fb36-36e1-414c-a359-ae6f70541afe [note16]
  turn 4 workflow task [run1/turn4]
  turn 5 workflow task: signalTarget completed, queryOwnWf completed [run1/turn5]
     noted timer 1 fired [note22]
  turn 6 workflow task: timer 1 fired [run1/turn6]
  turn 7 workflow task: fakeProgress completed [run1/turn7]
  ✓ execution.ended completed [note27]
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(tr.Anomalies) != 0 || tr.Scenario != "smorgasbord" {
		t.Errorf("anomalies %+v scenario %q", tr.Anomalies, tr.Scenario)
	}
}

// The Web UI's download of a workflow retried to attempt 3: the earlier
// attempts are other runs, named with their failure.
func TestRealUIDownload(t *testing.T) {
	data, err := os.ReadFile(realFile(t, "temporal-ui-raw-events.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, shape, err := temporal.Decode(data); err != nil || shape != temporal.ShapeUI {
		t.Fatalf("%s %v", shape, err)
	}
	tr := foldFile(t, realFile(t, "temporal-ui-raw-events.json"))
	want := `run 1 ✓ [run1]
   noted workflow attempt 3, a retry of run 7e00b341-c579-4bb5-9e28-810d34ef4329, which failed: failing on attempt 2 (earlier attempts are runs not in this history) [note2]
  turn 1 workflow task: workflow started [run1/turn1]
     noted marker Version change-id="initial version" version=3 [note4]
     noted UpsertWorkflowSearchAttributes [note5]
  ✓ execution.ended completed [note6]
`
	if got := dump(tr); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
