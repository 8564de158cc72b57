package main

import "github.com/engramdb/engram/server"

// The conversation and task lines of an export are the service's format
// (server.RecordLine, server.ReadExportFile, server.WriteExport), so that
// export and import work the same through a running server.
type recordLine = server.RecordLine

var importRecords = server.ImportRecords
