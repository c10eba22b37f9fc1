package adapt

import "sync"

// history is a bounded ring of Records, safe for one writer and concurrent
// readers.
type history struct {
	mu   sync.Mutex
	recs []Record
	next int // where the next record goes once the ring is full
	full bool
	// stats is the model's Stats as of the latest record.
	stats Stats
}

func (h *history) init(n int) { h.recs = make([]Record, 0, n) }

// add keeps r, and st as the model's Stats.
func (h *history) add(r Record, st Stats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats = st
	if !h.full {
		h.recs = append(h.recs, r)
		h.full = len(h.recs) == cap(h.recs)
		return
	}
	h.recs[h.next] = r
	h.next = (h.next + 1) % len(h.recs)
}

// last returns up to n of the latest records, oldest first (all when
// n <= 0).
func (h *history) last(n int) []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n <= 0 || n > len(h.recs) {
		n = len(h.recs)
	}
	// Copy only the n latest: callers ask for one after every batch.
	out := make([]Record, n)
	for i := range out {
		out[i] = h.recs[(h.next+len(h.recs)-n+i)%len(h.recs)]
	}
	return out
}

// statsNow returns the Stats given with the latest record.
func (h *history) statsNow() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}
