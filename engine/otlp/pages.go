package otlp

// pages are byte pages that hold no pointers: how an import holds the
// stored forms of many spans (heldRuns) and what the audit reads of them
// (keptSpans). What is appended to a page stays where it is; slices of it
// stay valid until free.
//
// Where the system has anonymous mappings (pagemem_unix.go), the pages are
// outside Go's heap: bounded by their users' budgets and let go explicitly,
// they are memory the collector neither scans nor counts. Counted, the 40
// MB an interleaved import holds in them brought its heap to the import's
// soft limit (ImportMemoryLimit), where the collector ran back to back
// (BENCHMARKS.md, 8g′).
type pages [][]byte

// pageBytes is the size of a page.
const pageBytes = 1 << 20

// last returns the last page once it has room for n more bytes: a new
// page of pageBytes (or n, if more) when it has not.
func (p *pages) last(n int) []byte {
	k := len(*p)
	if k == 0 || cap((*p)[k-1])-len((*p)[k-1]) < n {
		*p = append(*p, newPage(max(pageBytes, n)))
		k++
	}
	return (*p)[k-1]
}

// grown records pg, the last page appended to, and returns what was
// appended to it from at on.
func (p *pages) grown(pg []byte, at int) []byte {
	(*p)[len(*p)-1] = pg
	return pg[at:len(pg):len(pg)]
}

// add copies v into the pages and returns the copy.
func (p *pages) add(v []byte) []byte {
	pg := p.last(len(v))
	at := len(pg)
	return p.grown(append(pg, v...), at)
}

// free lets the pages go. Nothing may use a slice of them after.
func (p *pages) free() {
	for _, pg := range *p {
		freePage(pg)
	}
	clear(*p)
	*p = nil
}
