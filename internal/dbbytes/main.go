// Command dbbytes says where a retrylab database's bytes go: the pages each
// top-level collection holds (with the bytes in use on them), the free
// pages, bbolt's own pages and the growth reserve past the last page. It
// opens the file read-only. With -per N it also prints each figure divided
// by N (the attempts in the file, say, for BENCHMARKS.md's bytes per attempt).
//
//	go run ./internal/dbbytes -per 35063 small.db
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"
)

func main() {
	per := flag.Float64("per", 0, "also divide every figure by this (the attempts in the file)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dbbytes [-per N] FILE")
		os.Exit(2)
	}
	if err := report(os.Stdout, flag.Arg(0), *per); err != nil {
		fmt.Fprintln(os.Stderr, "dbbytes:", err)
		os.Exit(1)
	}
}

// row is one line of the report.
type row struct {
	name         string
	pages        int
	inuse, elems int
}

func report(w io.Writer, path string, per float64) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	page := db.Info().PageSize
	var rows []row
	var high int64
	err = db.View(func(tx *bolt.Tx) error {
		high = tx.Size()
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			rows = append(rows, row{
				name:  string(name),
				pages: s.BranchPageN + s.BranchOverflowN + s.LeafPageN + s.LeafOverflowN,
				inuse: s.BranchInuse + s.LeafInuse,
				elems: s.KeyN,
			})
			return nil
		})
	})
	if err != nil {
		return err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].pages > rows[j].pages })
	line := func(name string, bytes int64, extra string) {
		fmt.Fprintf(w, "%-22s %12d", name, bytes)
		if per > 0 {
			fmt.Fprintf(w, " %9.1f", float64(bytes)/per)
		}
		fmt.Fprintf(w, "  %s\n", extra)
	}
	fmt.Fprintf(w, "%-22s %12s", "collection", "bytes")
	if per > 0 {
		fmt.Fprintf(w, " %9s", "per")
	}
	fmt.Fprintf(w, "  %s\n", "(keys, bytes in use, fill)")
	counted := 0
	for _, r := range rows {
		counted += r.pages
		fill := 0.0
		if r.pages > 0 {
			fill = float64(r.inuse) / float64(r.pages*page) * 100
		}
		line(r.name, int64(r.pages*page), fmt.Sprintf("(%d keys, %d in use, %.0f%%)", r.elems, r.inuse, fill))
	}
	// A read-only handle does not load the freelist: what no collection
	// holds is free pages, the two meta pages and the freelist's own.
	other := int(high/int64(page)) - counted
	line("free and bbolt's own", int64(other*page), fmt.Sprintf("(%d pages: free, meta, freelist)", other))
	line("growth reserve", info.Size()-high, "(past the last page)")
	line("file", info.Size(), "")
	return nil
}
