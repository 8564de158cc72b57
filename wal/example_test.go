package wal_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/engramdb/engram/wal"
)

func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "wal")

	l, err := wal.Open(path, wal.Options{}) // Always: durable when Append returns
	if err != nil {
		log.Fatal(err)
	}
	first, _ := l.Append([]byte("remember: the user prefers tea"))
	l.Append([]byte("remember: the meeting moved to Friday"))
	l.Close()

	// After a restart: replay everything after a checkpoint at first.
	l, err = wal.Open(path, wal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	l.Replay(first+1, func(lsn wal.LSN, rec []byte) error {
		fmt.Printf("%s\n", rec)
		return nil
	})
	// Output: remember: the meeting moved to Friday
}
