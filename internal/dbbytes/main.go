// Command dbbytes prints where a retrylab database's bytes go: for each
// top-level collection its keys and the bytes of the pages it holds (nested
// collections and inline ones included) and of what is in use in them, then
// the free pages and the file's size. With -per N every figure is also
// divided by N (the attempts in the file, say), as BENCHMARKS.md gives them.
//
//	go run ./internal/dbbytes -per 35063 small.db
//
// It opens the file read-only and never writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	bolt "go.etcd.io/bbolt"
)

func main() {
	per := flag.Float64("per", 0, "also divide every figure by this (e.g. the attempts in the file)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: dbbytes [-per N] FILE.db")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *per); err != nil {
		fmt.Fprintln(os.Stderr, "dbbytes:", err)
		os.Exit(1)
	}
}

// usage is what one collection takes.
type usage struct {
	name        string
	keys        int
	alloc, used int64
}

func run(path string, per float64) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	var rows []usage
	var freeBytes, pending int64
	err = db.View(func(tx *bolt.Tx) error {
		if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			used := int64(s.BranchInuse + s.LeafInuse)
			if used == 0 { // the collection is inline, in its parent's page
				used = int64(s.InlineBucketInuse)
			}
			rows = append(rows, usage{name: string(name), keys: s.KeyN,
				alloc: int64(s.BranchAlloc + s.LeafAlloc), used: used})
			return nil
		}); err != nil {
			return err
		}
		st := db.Stats()
		freeBytes = int64(st.FreePageN) * int64(db.Info().PageSize)
		pending = int64(st.PendingPageN) * int64(db.Info().PageSize)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].alloc > rows[j].alloc })
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	div := func(n int64) string {
		if per <= 0 {
			return ""
		}
		return fmt.Sprintf("%.1f\t", float64(n)/per)
	}
	head := "collection\tkeys\tpage bytes\tin use\t"
	if per > 0 {
		head += "pages/N\tin use/N\t"
	}
	fmt.Fprintln(tw, head)
	var sum int64
	for _, r := range rows {
		sum += r.alloc
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s%s\n", r.name, r.keys, r.alloc, r.used, div(r.alloc), div(r.used))
	}
	fmt.Fprintf(tw, "(collections)\t\t%d\t\t%s\n", sum, div(sum))
	fmt.Fprintf(tw, "(free pages)\t\t%d\t\t%s\n", freeBytes+pending, div(freeBytes+pending))
	fmt.Fprintf(tw, "(file)\t\t%d\t\t%s\n", info.Size(), div(info.Size()))
	return tw.Flush()
}
