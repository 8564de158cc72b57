package main

import (
	"bufio"
	"io"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/engine"
)

// Sealed exports (export --encrypt, docs/format/export.md): the file has a
// passphrase or key file of its own, apart from any store's, so that it can
// be kept or moved where the store's keys are not. Like the store's, the
// secret comes from a file, the environment or a prompt, never argv.

// sealKeyFlags are export's and import's flags for a sealed export's secret.
type sealKeyFlags struct {
	passFile, keyFile string
}

func (f *sealKeyFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.passFile, "export-passphrase-file", "", "file holding the sealed export's passphrase (else $ENGRAM_EXPORT_PASSPHRASE or a prompt)")
	cmd.Flags().StringVar(&f.keyFile, "export-key-file", "", "key file of the sealed export (else $ENGRAM_EXPORT_KEY_FILE)")
}

// readSealKey returns a sealed export's key from the flags, the
// environment (ENGRAM_EXPORT_PASSPHRASE, ENGRAM_EXPORT_KEY_FILE) or the
// terminal (twice when confirm).
func (a *app) readSealKey(f sealKeyFlags, confirm bool) (*engine.Key, error) {
	return a.readKey("EXPORT_", f.passFile, f.keyFile, confirm)
}

// unsealImport returns r as it is, or, when r begins a sealed export, a
// reader of its plaintext (asking for its secret).
func (a *app) unsealImport(r io.Reader, f sealKeyFlags) (io.Reader, error) {
	br := bufio.NewReader(r)
	prefix, _ := br.Peek(8)
	if !engine.IsSealedStream(prefix) {
		if f.passFile != "" || f.keyFile != "" {
			return nil, &usageError{"--export-passphrase-file and --export-key-file are for sealed exports (export --encrypt); this file is not one"}
		}
		return br, nil
	}
	key, err := a.readSealKey(f, false)
	if err != nil {
		return nil, err
	}
	return engine.NewSealedReader(br, key)
}
