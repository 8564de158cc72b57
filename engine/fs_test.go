package engine

import "github.com/engramdb/engram/internal/vfs"

// openSegFile and readSegHeader are mapSegFile and readSegHeaderFS on the
// OS file system, for tests that look at a store's files directly.
func openSegFile(path string) (*segFile, error) { return mapSegFile(vfs.OS, path) }

func readSegHeader(path string) (segHeader, error) { return readSegHeaderFS(vfs.OS, path) }
