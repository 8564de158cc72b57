package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// secretFlags are the flags that carry a secret. Given on the command line
// they show in ps and the shell history, so memctl warns.
var secretFlags = []string{"token", "weaviate-token"}

// afterConfig runs once the flags are resolved: it warns about secrets in
// argv and, unless --json asked for exact output, routes stdout through a
// termWriter so no stored text reaches the terminal as control characters.
func (a *app) afterConfig(cmd *cobra.Command) {
	for _, name := range secretFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			fmt.Fprintf(a.stderr, "memctl: warning: --%s puts a secret on the command line, where other users can see it (ps, shell history); use %s or a file instead\n",
				name, envName(name))
		}
	}
	if !a.jsonOut && a.rawStdout == nil {
		a.rawStdout = a.stdout
		a.stdout = &termWriter{w: a.stdout}
	}
}

// exactStdout is stdout without the termWriter, for data formats that must
// stay byte-exact (export's JSON Lines).
func (a *app) exactStdout() io.Writer {
	if a.rawStdout != nil {
		return a.rawStdout
	}
	return a.stdout
}

// flushStdout writes out what the termWriter still holds.
func (a *app) flushStdout() {
	if tw, ok := a.stdout.(*termWriter); ok {
		tw.Close()
	}
}
