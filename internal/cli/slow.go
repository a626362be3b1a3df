package cli

import (
	"time"

	"github.com/spf13/cobra"
)

// slowPace is the slow motion --slow gives without a value: long enough
// for a room to read each attempt as it comes.
const slowPace = 2 * time.Second

// slowFlag adds --slow[=DURATION] to cmd: slow motion, each attempt waited
// for (and recorded as a wait) so a room can follow; the scenario's
// deadlines stay as they are.
func slowFlag(cmd *cobra.Command, pace *time.Duration) {
	cmd.Flags().DurationVar(pace, "slow", 0, "slow motion: wait before each attempt so a room can follow (--slow is 2s; --slow=5s)")
	cmd.Flags().Lookup("slow").NoOptDefVal = slowPace.String()
}
