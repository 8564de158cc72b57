package keyword

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ,.!? ", nil},
		{"The Quick brown foxes are RUNNING", []string{"quick", "brown", "fox", "run"}},
		{"Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３", []string{"full", "width", "abc", "123"}}, // NFKC
		{"ﬁle", []string{"file"}}, // ligature
		{"engram's index", []string{"engram", "index"}},
		{"Alice’s notes", []string{"alic", "note"}},
		{"don't", []string{"don", "t"}},
		{"记忆库", []string{"记", "记忆", "忆", "忆库", "库"}},
		{"我喜欢Go语言", []string{"我", "我喜", "喜", "喜欢", "欢", "go", "语", "语言", "言"}},
		{"2024年", []string{"2024", "年"}},
		{"カタカナ", []string{"カ", "カタ", "タ", "タカ", "カ", "カナ", "ナ"}},
		{"한국어 문장", []string{"한", "한국", "국", "국어", "어", "문", "문장", "장"}},
		{"Müller café naïve", []string{"müller", "café", "naïve"}},
		{"x\xffy", []string{"x", "y"}},
		{"COVID-19 v2.0", []string{"covid", "19", "v2", "0"}},
	}
	for _, c := range cases {
		if got := Tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTokensAnalyzerOptions(t *testing.T) {
	plain := analyzer{}
	if got, want := plain.appendTokens(nil, "The running dogs"), []string{"the", "running", "dogs"}; !slices.Equal(got, want) {
		t.Errorf("plain analyzer: %q, want %q", got, want)
	}
}

func TestTokensLongWordDropped(t *testing.T) {
	long := make([]byte, maxTokenBytes+1)
	for i := range long {
		long[i] = 'q'
	}
	if got := Tokens(string(long) + " ok"); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("got %q", got)
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"hello world", "记忆库", "a's", "'s", "x’S", "\xff\xfe", "ＡＢＣ", "ǅ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokens(s) {
			if tok == "" {
				t.Fatalf("empty token from %q", s)
			}
		}
	})
}
