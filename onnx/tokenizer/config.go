package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// UnsupportedError reports a tokenizer.json component this package does not
// implement; Component is "model", "normalizer", "pre_tokenizer",
// "post_processor", "truncation" or "padding".
type UnsupportedError struct {
	Component string
	Type      string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer: unsupported %s %q", e.Component, e.Type)
}

// fileJSON is the part of HF's tokenizer.json that encoding depends on. The
// decoder is ignored: this package does not decode.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Model         json.RawMessage  `json:"model"`
	Truncation    json.RawMessage  `json:"truncation"`
	Padding       json.RawMessage  `json:"padding"`
}

type addedTokenJSON struct {
	ID         *int64 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func typeOf(raw json.RawMessage, component string) (string, error) {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", fmt.Errorf("tokenizer: %s: %w", component, err)
	}
	return t.Type, nil
}

// vocabEntry is one [piece, score] pair of a Unigram vocabulary.
type vocabEntry struct {
	piece string
	score float64
}

// parseVocab reads a Unigram vocabulary, [["piece", score], ...]. A
// hand-rolled scanner: encoding/json spends ~1 s and ~300 MB on the 250,002
// pieces of XLM-R through a per-entry UnmarshalJSON. Pieces with escapes
// still go through encoding/json, so strings decode exactly as it does.
func parseVocab(b []byte) ([]vocabEntry, error) {
	p := vocabScanner{b: b}
	var out []vocabEntry
	if !p.expect('[') {
		return nil, p.fail("vocab is not an array")
	}
	if p.peek() == ']' {
		p.i++
		return out, p.end()
	}
	for {
		if !p.expect('[') {
			return nil, p.fail("vocabulary entry is not a [piece, score] pair")
		}
		piece, err := p.str()
		if err != nil {
			return nil, err
		}
		if !p.expect(',') {
			return nil, p.fail("vocabulary entry is not a [piece, score] pair")
		}
		score, err := p.num()
		if err != nil {
			return nil, err
		}
		if !p.expect(']') {
			return nil, p.fail("vocabulary entry is not a [piece, score] pair")
		}
		out = append(out, vocabEntry{piece, score})
		if p.expect(']') {
			return out, p.end()
		}
		if !p.expect(',') {
			return nil, p.fail("expected , or ] in vocab")
		}
	}
}

type vocabScanner struct {
	b []byte
	i int
}

// peek skips whitespace and returns the next byte, or -1 at the end.
func (p *vocabScanner) peek() int {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
	if p.i == len(p.b) {
		return -1
	}
	return int(p.b[p.i])
}

func (p *vocabScanner) expect(c byte) bool {
	if p.peek() != int(c) {
		return false
	}
	p.i++
	return true
}

func (p *vocabScanner) end() error {
	if p.peek() != -1 {
		return p.fail("trailing data after vocab")
	}
	return nil
}

func (p *vocabScanner) fail(msg string) error {
	return fmt.Errorf("%s (byte %d of vocab)", msg, p.i)
}

func (p *vocabScanner) str() (string, error) {
	if p.peek() != '"' {
		return "", p.fail("piece is not a string")
	}
	start, simple := p.i, true
	for p.i++; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '\\':
			simple = false
			p.i++
		case c < 0x20:
			return "", p.fail("control character in piece")
		case c == '"':
			p.i++
			raw := p.b[start+1 : p.i-1]
			if simple && utf8.Valid(raw) {
				return string(raw), nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
				return "", p.fail(err.Error())
			}
			return s, nil
		}
	}
	return "", p.fail("unterminated string")
}

func (p *vocabScanner) num() (float64, error) {
	p.peek()
	start := p.i
	for p.i < len(p.b) && strings.IndexByte("+-.0123456789eE", p.b[p.i]) >= 0 {
		p.i++
	}
	// encoding/json's grammar check, then the exact float.
	var f float64
	if err := json.Unmarshal(p.b[start:p.i], &f); err != nil {
		return 0, p.fail("score is not a number")
	}
	return f, nil
}

func parseModel(raw json.RawMessage) (*unigram, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("tokenizer: no model")
	}
	typ, err := typeOf(raw, "model")
	if err != nil {
		return nil, err
	}
	if typ != "Unigram" {
		return nil, &UnsupportedError{"model", typ}
	}
	var m struct {
		UnkID        *int            `json:"unk_id"`
		Vocab        json.RawMessage `json:"vocab"`
		ByteFallback bool            `json:"byte_fallback"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tokenizer: model: %w", err)
	}
	vocab, err := parseVocab(m.Vocab)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: model: %w", err)
	}
	u, err := newUnigram(vocab, m.UnkID, m.ByteFallback)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return u, nil
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	typ, err := typeOf(raw, "normalizer")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Sequence: %w", err)
		}
		var seq sequenceNormalizer
		for _, r := range s.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			seq = append(seq, n)
		}
		return seq, nil
	case "Precompiled":
		var p struct {
			Charsmap *string `json:"precompiled_charsmap"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Precompiled: %w", err)
		}
		if p.Charsmap == nil {
			return nil, fmt.Errorf("tokenizer: normalizer Precompiled: no precompiled_charsmap")
		}
		data, err := base64.StdEncoding.DecodeString(*p.Charsmap)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Precompiled: %w", err)
		}
		pc, err := parsePrecompiled(data)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Precompiled: %w", err)
		}
		return pc, nil
	case "Replace":
		var r struct {
			Pattern struct {
				String *string `json:"String"`
				Regex  *string `json:"Regex"`
			} `json:"pattern"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Replace: %w", err)
		}
		switch {
		case r.Pattern.String != nil:
			return &replaceNormalizer{literal: *r.Pattern.String, content: r.Content}, nil
		case r.Pattern.Regex != nil:
			re, err := regexp.Compile(*r.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("tokenizer: normalizer Replace: pattern %q (Go RE2 syntax): %w", *r.Pattern.Regex, err)
			}
			return &replaceNormalizer{re: re, content: r.Content}, nil
		}
		return nil, fmt.Errorf("tokenizer: normalizer Replace: pattern is neither String nor Regex")
	case "Strip":
		var s struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Strip: %w", err)
		}
		return stripNormalizer{s.Left, s.Right}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer Prepend: %w", err)
		}
		return prependNormalizer(p.Prepend), nil
	}
	return nil, &UnsupportedError{"normalizer", typ}
}

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	typ, err := typeOf(raw, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		var s struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("tokenizer: pre_tokenizer Sequence: %w", err)
		}
		var seq sequencePreTokenizer
		for _, r := range s.PreTokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			seq = append(seq, p)
		}
		return seq, nil
	case "WhitespaceSplit":
		return whitespaceSplit{}, nil
	case "Metaspace":
		var m struct {
			Replacement    *string `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			Split          *bool   `json:"split"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("tokenizer: pre_tokenizer Metaspace: %w", err)
		}
		ms := &metaspace{repl: "▁", scheme: prependAlways, split: true}
		if m.Replacement != nil {
			if utf8.RuneCountInString(*m.Replacement) != 1 {
				return nil, fmt.Errorf("tokenizer: pre_tokenizer Metaspace: replacement %q is not one character", *m.Replacement)
			}
			ms.repl = *m.Replacement
		}
		if m.Split != nil {
			ms.split = *m.Split
		}
		switch {
		case m.PrependScheme != nil:
			switch *m.PrependScheme {
			case "always":
			case "first":
				ms.scheme = prependFirst
			case "never":
				ms.scheme = prependNever
			default:
				return nil, &UnsupportedError{"pre_tokenizer", "Metaspace prepend_scheme " + *m.PrependScheme}
			}
		case m.AddPrefixSpace != nil && !*m.AddPrefixSpace: // legacy files
			ms.scheme = prependNever
		}
		return ms, nil
	}
	return nil, &UnsupportedError{"pre_tokenizer", typ}
}

// postProcessor adds special tokens around the model's tokens: prefix and
// suffix are (id, token, type id) triples; seqType is the type id of the text.
type postProcessor struct {
	prefix, suffix []special
	seqType        int32
}

type special struct {
	id     int32
	token  string
	typeID int32
}

func (p *postProcessor) added() int { return len(p.prefix) + len(p.suffix) }

func parsePostProcessor(raw json.RawMessage) (*postProcessor, error) {
	if isNull(raw) {
		return &postProcessor{}, nil
	}
	typ, err := typeOf(raw, "post_processor")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "RobertaProcessing", "BertProcessing":
		var r struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: %w", typ, err)
		}
		cls, err := parsePair(r.Cls)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: cls: %w", typ, err)
		}
		sep, err := parsePair(r.Sep)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: sep: %w", typ, err)
		}
		return &postProcessor{prefix: []special{cls}, suffix: []special{sep}}, nil
	case "TemplateProcessing":
		return parseTemplate(raw)
	}
	return nil, &UnsupportedError{"post_processor", typ}
}

func parsePair(pair []json.RawMessage) (special, error) {
	var s special
	if len(pair) != 2 {
		return s, fmt.Errorf("want [token, id]")
	}
	var id int64
	if err := json.Unmarshal(pair[0], &s.token); err != nil {
		return s, err
	}
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return s, err
	}
	if id < 0 || id > 1<<31-1 {
		return s, fmt.Errorf("id %d out of range", id)
	}
	s.id = int32(id)
	return s, nil
}

func parseTemplate(raw json.RawMessage) (*postProcessor, error) {
	var t struct {
		Single []struct {
			SpecialToken *struct {
				ID     string `json:"id"`
				TypeID int32  `json:"type_id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int32  `json:"type_id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs    []int32  `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: %w", err)
	}
	p := &postProcessor{}
	seen := false
	for _, item := range t.Single {
		switch {
		case item.Sequence != nil:
			if item.Sequence.ID != "A" || seen {
				return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: single template must hold $A once, got $%s", item.Sequence.ID)
			}
			seen, p.seqType = true, item.Sequence.TypeID
		case item.SpecialToken != nil:
			st, ok := t.SpecialTokens[item.SpecialToken.ID]
			if !ok {
				return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: special token %q is not defined", item.SpecialToken.ID)
			}
			if len(st.IDs) != len(st.Tokens) {
				return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: special token %q has %d ids and %d tokens", item.SpecialToken.ID, len(st.IDs), len(st.Tokens))
			}
			for k, id := range st.IDs {
				if id < 0 {
					return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: special token %q has negative id %d", item.SpecialToken.ID, id)
				}
				sp := special{id, st.Tokens[k], item.SpecialToken.TypeID}
				if seen {
					p.suffix = append(p.suffix, sp)
				} else {
					p.prefix = append(p.prefix, sp)
				}
			}
		default:
			return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: template piece is neither SpecialToken nor Sequence")
		}
	}
	if !seen {
		return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: single template has no $A")
	}
	return p, nil
}

func parseTruncation(raw json.RawMessage) (truncation, bool, error) {
	if isNull(raw) {
		return truncation{}, false, nil
	}
	var t struct {
		MaxLength int    `json:"max_length"`
		Direction string `json:"direction"`
		Strategy  string `json:"strategy"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return truncation{}, false, fmt.Errorf("tokenizer: truncation: %w", err)
	}
	tr := truncation{maxLength: t.MaxLength}
	switch t.Direction {
	case "", "Right":
	case "Left":
		tr.left = true
	default:
		return tr, false, &UnsupportedError{"truncation", "direction " + t.Direction}
	}
	if t.MaxLength < 0 {
		return tr, false, fmt.Errorf("tokenizer: truncation: max_length %d is negative", t.MaxLength)
	}
	return tr, true, nil
}

// parsePadding returns the padding config of a file and its pad_id (-1 when
// the file names none).
func parsePadding(raw json.RawMessage) (*Padding, int64, error) {
	if isNull(raw) {
		return nil, -1, nil
	}
	var p struct {
		Strategy  json.RawMessage `json:"strategy"`
		Direction string          `json:"direction"`
		Multiple  *int            `json:"pad_to_multiple_of"`
		PadTypeID int32           `json:"pad_type_id"`
		PadID     *int64          `json:"pad_id"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, -1, fmt.Errorf("tokenizer: padding: %w", err)
	}
	pad := &Padding{Strategy: PadLongest, TypeID: p.PadTypeID}
	var name string
	var fixed struct {
		Fixed *int `json:"Fixed"`
	}
	switch {
	case json.Unmarshal(p.Strategy, &name) == nil:
		if name != "BatchLongest" {
			return nil, -1, &UnsupportedError{"padding", "strategy " + name}
		}
	case json.Unmarshal(p.Strategy, &fixed) == nil && fixed.Fixed != nil:
		pad.Strategy, pad.Length = PadFixed, *fixed.Fixed
	default:
		return nil, -1, fmt.Errorf("tokenizer: padding: strategy %s is neither \"BatchLongest\" nor {\"Fixed\": n}", p.Strategy)
	}
	switch p.Direction {
	case "", "Right":
	case "Left":
		pad.Left = true
	default:
		return nil, -1, &UnsupportedError{"padding", "direction " + p.Direction}
	}
	if p.Multiple != nil {
		pad.Multiple = *p.Multiple
	}
	id := int64(-1)
	if p.PadID != nil {
		if *p.PadID < 0 || *p.PadID > 1<<31-1 {
			return nil, -1, fmt.Errorf("tokenizer: padding: pad_id %d out of range", *p.PadID)
		}
		id = *p.PadID
	}
	return pad, id, nil
}
