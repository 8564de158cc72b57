package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/engramdb/engram/engine"
)

// Exit codes, documented in the package doc.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitLocked = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError marks a command line mistake (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// run executes one memctl command line and returns its exit code. It is the
// whole program minus process plumbing, so tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr}).run(ctx, args)
}

// run executes one command line on a fresh a (tests set a.engineOpts).
func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	a.flushStdout()
	if cerr := a.close(); err == nil {
		err = cerr
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(a.stderr, "memctl:", sanitize(err.Error()))
	var ue *usageError
	switch {
	case errors.As(err, &ue) || isCobraUsageError(err):
		return exitUsage
	case errors.Is(err, engine.ErrLocked):
		return exitLocked
	case isKeyError(err):
		return exitKey
	}
	return exitFailed
}
