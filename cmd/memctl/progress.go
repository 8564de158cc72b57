package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress returns a progress bar on stderr when stderr is a terminal, and a
// silent one otherwise (scripts and logs get no control characters).
func (a *app) progress(total int64, what string) *progressbar.ProgressBar {
	f, ok := a.stderr.(*os.File)
	if !ok || a.jsonOut || !term.IsTerminal(int(f.Fd())) {
		return progressbar.DefaultSilent(total, what)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionOnCompletion(func() { io.WriteString(a.stderr, "\n") }),
	)
}

// byteProgress is progress over bytes (downloads).
func (a *app) byteProgress(total int64, what string) *progressbar.ProgressBar {
	f, ok := a.stderr.(*os.File)
	if !ok || a.jsonOut || !term.IsTerminal(int(f.Fd())) {
		return progressbar.DefaultSilent(total, what)
	}
	return progressbar.DefaultBytes(total, what)
}
