package audit

// Listing is an audit's report read a finding at a time: its head (the
// report without its findings, the counts of all of them included), then
// each finding in the report's order. A command that prints a report
// through a host holds one finding at a time this way, not the whole
// report (a quarter of a million findings is some 200 MB).
type Listing struct {
	head  Report
	next  func() (*Finding, error)
	close func() error
	// nilFindings keeps a whole report's nil Findings null in JSON, as
	// encoding/json writes it.
	nilFindings bool
}

// NewListing is a listing of head (its Findings unused) whose findings
// next gives, nil at the end; close, if not nil, ends the reading early or
// late.
func NewListing(head Report, next func() (*Finding, error), close func() error) *Listing {
	head.Findings = nil
	return &Listing{head: head, next: next, close: close}
}

// ListingOf lists a report held whole.
func ListingOf(r Report) *Listing {
	i := 0
	l := NewListing(r, func() (*Finding, error) {
		if i == len(r.Findings) {
			return nil, nil
		}
		i++
		return &r.Findings[i-1], nil
	}, nil)
	l.nilFindings = r.Findings == nil
	return l
}

// Head is the report without its findings.
func (l *Listing) Head() Report { return l.head }

// Next is the next finding, nil after the last.
func (l *Listing) Next() (*Finding, error) { return l.next() }

// Close ends the listing; call it once, read to the end or not.
func (l *Listing) Close() error {
	if l.close == nil {
		return nil
	}
	return l.close()
}

// Collect reads the rest of the findings into a whole report.
func (l *Listing) Collect() (Report, error) {
	r := l.head
	r.Findings = []Finding{}
	for {
		f, err := l.Next()
		if err != nil || f == nil {
			return r, err
		}
		r.Findings = append(r.Findings, *f)
	}
}

// each calls fn for every finding left, with its number from 1.
func (l *Listing) each(fn func(i int, f *Finding) error) error {
	for i := 1; ; i++ {
		f, err := l.Next()
		if err != nil || f == nil {
			return err
		}
		if err := fn(i, f); err != nil {
			return err
		}
	}
}
