package room

import (
	"sync"
	"time"
)

// failureLimiter slows an address down that keeps failing to authenticate:
// after maxFailures refusals within window, its requests are refused
// without a look at their credentials until window has passed since the
// last failure. It is owned by one Server.
type failureLimiter struct {
	maxFailures int
	window      time.Duration
	now         func() time.Time

	mu       sync.Mutex
	failures map[string]*failures
}

type failures struct {
	n    int
	last time.Time
}

// maxTracked bounds the addresses the limiter remembers; past it, the
// ones whose window passed are forgotten.
const maxTracked = 4096

func newFailureLimiter(maxFailures int, window time.Duration, now func() time.Time) *failureLimiter {
	return &failureLimiter{maxFailures: maxFailures, window: window, now: now, failures: map[string]*failures{}}
}

// blocked says whether addr must wait, and for how long.
func (l *failureLimiter) blocked(addr string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.failures[addr]
	if f == nil {
		return false, 0
	}
	left := l.window - l.now().Sub(f.last)
	if left <= 0 {
		delete(l.failures, addr)
		return false, 0
	}
	return f.n >= l.maxFailures, left
}

// fail counts one refusal of addr.
func (l *failureLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.failures) >= maxTracked {
		for a, f := range l.failures {
			if now.Sub(f.last) >= l.window {
				delete(l.failures, a)
			}
		}
	}
	f := l.failures[addr]
	if f == nil {
		if len(l.failures) >= maxTracked {
			return // under a flood of addresses: remember none new
		}
		f = &failures{}
		l.failures[addr] = f
	}
	if now.Sub(f.last) >= l.window {
		f.n = 0
	}
	f.n++
	f.last = now
}
