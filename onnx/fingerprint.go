package onnx

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// fingerprint hashes the model, its external data and the tokenizer file,
// each prefixed by its role and size so that moving bytes between files
// changes the sum, then appends what else decides the vectors.
func fingerprint(opts Options, model []byte, e *Embedder) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "model %d\n", len(model))
	h.Write(model)
	data := opts.DataFiles
	if data == nil {
		locs, err := externalDataLocations(model)
		if err != nil {
			return "", err
		}
		for _, l := range locs {
			data = append(data, filepath.Join(filepath.Dir(opts.ModelPath), filepath.FromSlash(l)))
		}
	}
	var files []struct{ role, path string }
	for _, p := range data {
		files = append(files, struct{ role, path string }{"data", p})
	}
	if opts.TokenizerPath != "" {
		files = append(files, struct{ role, path string }{"tokenizer", opts.TokenizerPath})
	} else {
		fmt.Fprintf(h, "tokenizer %T\n", opts.Tokenizer)
	}
	for _, f := range files {
		if err := hashFile(h, f.role, f.path); err != nil {
			return "", fmt.Errorf("onnx: fingerprint: %w", err)
		}
	}
	return fmt.Sprintf("onnx:%s:out=%s:pool=%s:dim=%d:max=%d:sha256=%s",
		filepath.Base(filepath.Dir(opts.ModelPath)), e.output, e.pooling, e.dim, e.maxTokens,
		hex.EncodeToString(h.Sum(nil))), nil
}

func hashFile(h io.Writer, role, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s %d\n", role, st.Size())
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed while being hashed", path)
	}
	return nil
}
