package engine

import (
	"sync"

	"github.com/retrylab/retrylab/engine/notice"
)

// bus fans notices out to subscribers without ever blocking the publisher.
type bus struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
}

type subscriber struct {
	ch     chan notice.Notice
	lagged bool
}

func newBus() *bus { return &bus{subs: map[*subscriber]struct{}{}} }

func (b *bus) subscribe(buffer int) (<-chan notice.Notice, func()) {
	if buffer < 1 {
		buffer = 1
	}
	s := &subscriber{ch: make(chan notice.Notice, buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	b.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
		})
	}
}

func (b *bus) publish(n notice.Notice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.lagged {
			select {
			case s.ch <- notice.Notice{Lagged: true}:
				s.lagged = false
			default:
				continue
			}
		}
		select {
		case s.ch <- n:
		default:
			s.lagged = true
		}
	}
}

func (b *bus) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		close(s.ch)
		delete(b.subs, s)
	}
}

// Subscribe follows everything the host records and the world does, from now
// on. The channel never blocks the host: a subscriber that falls behind gets
// a Lagged notice. Call the returned function to stop.
func (h *Host) Subscribe(buffer int) (<-chan notice.Notice, func()) { return h.bus.subscribe(buffer) }
