package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/engramdb/engram/engine"
)

// Encryption at rest (docs/format/encryption.md): the passphrase or key
// file comes from a file (--passphrase-file, --key-file), the environment
// (ENGRAM_PASSPHRASE, ENGRAM_KEY_FILE) or a prompt on the terminal, never
// from the command line itself.

const exitKey = 4 // wrong passphrase or key, or none given for an encrypted store

// storeKey returns the key for the local store in a.dir: nil when the
// store is not encrypted and `init --encrypt` did not ask for it.
func (a *app) storeKey() (*engine.Key, error) {
	enc, err := engine.IsEncrypted(nil, a.dir)
	if err != nil {
		return nil, err
	}
	if !enc && !a.encrypt {
		return nil, nil
	}
	return a.readKey("", a.passphraseFile, a.keyFile, a.encrypt && !enc)
}

// readKey reads a key from passFile, keyFile, the environment (prefix ""
// for the store's, "NEW_" for change-key's new one, "EXPORT_" for a sealed
// export's) or the terminal (twice when confirm).
func (a *app) readKey(envPrefix, passFile, keyFile string, confirm bool) (*engine.Key, error) {
	flag := "--" + strings.ToLower(strings.ReplaceAll(envPrefix, "_", "-"))
	if passFile != "" && keyFile != "" {
		return nil, &usageError{fmt.Sprintf("give %spassphrase-file or %skey-file, not both", flag, flag)}
	}
	if keyFile == "" && passFile == "" {
		keyFile = os.Getenv("ENGRAM_" + envPrefix + "KEY_FILE")
	}
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		return &engine.Key{KeyFile: b}, nil
	}
	if passFile != "" {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return nil, fmt.Errorf("passphrase file: %w", err)
		}
		return &engine.Key{Passphrase: []byte(strings.TrimRight(string(b), "\r\n"))}, nil
	}
	if p := os.Getenv("ENGRAM_" + envPrefix + "PASSPHRASE"); p != "" {
		return &engine.Key{Passphrase: []byte(p)}, nil
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, fmt.Errorf("%w: give %spassphrase-file, %skey-file, $ENGRAM_%sPASSPHRASE or $ENGRAM_%sKEY_FILE (no terminal to prompt on)", engine.ErrKeyRequired, flag, flag, envPrefix, envPrefix)
	}
	switch envPrefix {
	case "":
		fmt.Fprintf(a.stderr, "passphrase for %s: ", a.dir)
	case "NEW_":
		fmt.Fprintf(a.stderr, "new passphrase for %s: ", a.dir)
	default:
		fmt.Fprint(a.stderr, "passphrase of the sealed export: ")
	}
	p, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(a.stderr)
	if err != nil {
		return nil, err
	}
	if confirm {
		fmt.Fprintf(a.stderr, "again: ")
		q, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return nil, err
		}
		if string(p) != string(q) {
			return nil, &usageError{"the passphrases differ"}
		}
	}
	if len(p) == 0 {
		return nil, &usageError{"empty passphrase"}
	}
	return &engine.Key{Passphrase: p}, nil
}

func isKeyError(err error) bool {
	return errors.Is(err, engine.ErrWrongKey) || errors.Is(err, engine.ErrKeyRequired)
}

func (a *app) changeKeyCommand() *cobra.Command {
	var newPassFile, newKeyFile string
	cmd := &cobra.Command{
		Use:   "change-key",
		Short: "Change an encrypted store's passphrase or key file (re-seals its keys; no data is rewritten)",
		Long: "Change the passphrase (or key file) of the encrypted store in --dir, which must be closed. " +
			"The old key comes from --passphrase-file/--key-file, $ENGRAM_PASSPHRASE/$ENGRAM_KEY_FILE or a prompt; " +
			"the new one from --new-passphrase-file/--new-key-file, $ENGRAM_NEW_PASSPHRASE/$ENGRAM_NEW_KEY_FILE or a prompt.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if enc, err := engine.IsEncrypted(nil, a.dir); err != nil {
				return err
			} else if !enc {
				return fmt.Errorf("%s is not an encrypted store", a.dir)
			}
			old, err := a.readKey("", a.passphraseFile, a.keyFile, false)
			if err != nil {
				return err
			}
			nk, err := a.readKey("NEW_", newPassFile, newKeyFile, true)
			if err != nil {
				return err
			}
			if err := engine.ChangeKey(a.dir, a.engineOpts, old, nk); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "key of %s changed\n", a.dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&newPassFile, "new-passphrase-file", "", "file holding the new passphrase")
	cmd.Flags().StringVar(&newKeyFile, "new-key-file", "", "new key file (32 bytes or 64 hex digits; memctl keyfile makes one)")
	return cmd
}

func (a *app) rotateKeysCommand() *cobra.Command {
	var dropOld bool
	cmd := &cobra.Command{
		Use:   "rotate-keys",
		Short: "Start a new key generation in an encrypted store and rewrite its files under it (resumable)",
		Long: "rotate-keys makes new data keys for the encrypted store in --dir (which must be closed: stop `memctl serve`\n" +
			"first) and rewrites every segment file under them, with progress. The old keys stay in KEYS, retired, so\n" +
			"backups taken before still open with the store's KEYS; --drop-old destroys them once every file is rewritten\n" +
			"(those backups then no longer open). After an interruption, run it again: it finishes the same rotation.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isRemote(a.dir) {
				return usagef("rotate-keys works on a store directory, not a server")
			}
			if enc, err := engine.IsEncrypted(nil, a.dir); err != nil {
				return err
			} else if !enc {
				return fmt.Errorf("%s is not an encrypted store", a.dir)
			}
			eo := a.engineOpts
			if eo.Key == nil {
				k, err := a.storeKey()
				if err != nil {
					return err
				}
				eo.Key = k
			}
			db, err := engine.Open(a.dir, eo)
			if err != nil {
				return fmt.Errorf("opening store %s: %w", a.dir, err)
			}
			bar := a.lazyProgress("rewriting files")
			gen, err := db.RotateKeys(bar.set)
			if err == nil && dropOld {
				_, err = db.DropRetiredKeys()
			}
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"generation": gen, "dropped_old": dropOld})
			}
			fmt.Fprintf(a.stdout, "keys of %s at generation %d", a.dir, gen)
			if dropOld {
				fmt.Fprint(a.stdout, "; older generations destroyed")
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dropOld, "drop-old", false, "destroy the retired keys once every file is rewritten (backups taken before no longer open)")
	return cmd
}

func (a *app) keyFileCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keyfile PATH",
		Short: "Write a new random key file (mode 0600) for init --encrypt --key-file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(engine.NewKeyFile()); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
}
