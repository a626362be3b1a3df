package cputime

// HostTicks is what the machine's CPUs did since boot, in clock ticks, as
// the kernel counts them (Host): how much of it the hypervisor gave to
// other machines (steal) and how much no process wanted (idle, waits for
// I/O included) out of all (total). A benchmark on a shared virtual
// machine reports the steal over its run beside its figures: the same code
// takes longer, and its figures move, while it is high. The idle part says
// whether a run was bound by the machine's cores or by something that
// waited.
type HostTicks struct {
	Steal, Idle, Total uint64
}

// StealPercent is the part of the machine's CPU time from a to b that
// was stolen, in percent; 0 when the system does not say.
func (a HostTicks) StealPercent(b HostTicks) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Total-a.Total)
}

// IdlePercent is the part of the machine's CPU time from a to b that no
// process used (idle or waiting for I/O), in percent; 0 when the system
// does not say.
func (a HostTicks) IdlePercent(b HostTicks) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return 100 * float64(b.Idle-a.Idle) / float64(b.Total-a.Total)
}
