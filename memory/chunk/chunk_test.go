package chunk

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

func TestSplitGolden(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"empty", "", 0, nil},
		{"blank", " \n\t\n ", 0, nil},
		{"short kept whole", "Remember that I like green tea.", 0, []string{"Remember that I like green tea."}},
		{"chinese sentences", "今天天气很好。我们去公园散步吧！你觉得怎么样？明天还要上班。", 14,
			[]string{"今天天气很好。", "我们去公园散步吧！", "你觉得怎么样？明天还要上班。"}},
		{"chinese quote stays", "他说：“好的。”然后走了很远很远的路。", 12,
			[]string{"他说：“好的。”", "然后走了很远很远的路。"}},
		{"english sentences", "Engram is a local-first memory engine. It chunks, embeds and indexes text! Does it work? Yes.", 40,
			[]string{"Engram is a local-first memory engine.", "It chunks, embeds and indexes text!", "Does it work? Yes."}},
		{"decimal point is not an end", "Version 3.14 shipped on time. Users liked it a lot.", 30,
			[]string{"Version 3.14 shipped on time.", "Users liked it a lot."}},
		{"paragraphs first", "First paragraph has one sentence.\n\nSecond paragraph also has one.", 0,
			[]string{"First paragraph has one sentence.", "Second paragraph also has one."}},
		{"tiny paragraph merged", "Notes:\n\nThe meeting moved to Tuesday at noon.", 0,
			[]string{"Notes:\n\nThe meeting moved to Tuesday at noon."}},
		{"newline ends sentence", "buy milk\nbuy eggs and a loaf of bread\ncall mom about the weekend", 40,
			[]string{"buy milk\nbuy eggs and a loaf of bread", "call mom about the weekend"}},
		{"mixed", "我在用 Go 写一个 memory engine。It supports 中文 and English. 他说：“好的。”然后走了。", 40,
			[]string{"我在用 Go 写一个 memory engine。", "It supports 中文 and English. 他说：“好的。”", "然后走了。"}},
		{"long sentence cut at space", "This paragraph is long enough to stand alone as a chunk of text.", 40,
			[]string{"This paragraph is long enough to stand", "alone as a chunk of text."}},
		{"long chinese cut at comma", "我们在本地运行记忆引擎，所有数据都不离开用户的机器，延迟很低", 15,
			[]string{"我们在本地运行记忆引擎，", "所有数据都不离开用户的机器，", "延迟很低"}},
		{"no break opportunity", strings.Repeat("记", 25), 10,
			[]string{strings.Repeat("记", 10), strings.Repeat("记", 10), strings.Repeat("记", 5)}},
		{"grapheme kept whole", strings.Repeat("e\u0301", 6), 5,
			[]string{"e\u0301e\u0301", "e\u0301e\u0301", "e\u0301e\u0301"}},
		{"emoji family", "👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧", 6,
			[]string{"👨‍👩‍👧", "👨‍👩‍👧", "👨‍👩‍👧"}},
	}
	for _, c := range cases {
		got, err := Split(c.in, Options{MaxChars: c.max})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		checkInvariants(t, c.in, got, c.max)
	}
}

func TestSplitDefaults(t *testing.T) {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 30) // 1350 runes
	got, err := Split(long, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d chunks, want 5 (300-rune default)", len(got))
	}
	for _, c := range got {
		if n := utf8.RuneCountInString(c); n > DefaultMaxChars || !strings.HasSuffix(c, ".") {
			t.Errorf("chunk of %d runes not ending a sentence: %q", n, c)
		}
	}
}

func TestSplitBadOptions(t *testing.T) {
	for _, o := range []Options{{MaxChars: -1}, {MaxChars: 10, MinChars: 11}} {
		if got, err := Split("text", o); !errors.Is(err, ErrOptions) || got != nil {
			t.Errorf("%+v: %q %v", o, got, err)
		}
	}
	if got, err := Split("a. b. c.", Options{MaxChars: 3, MinChars: -1}); err != nil || len(got) != 3 {
		t.Errorf("merging disabled: %q %v", got, err)
	}
}

// checkInvariants verifies what Split promises for any input.
func checkInvariants(t *testing.T, text string, chunks []string, maxChars int) {
	t.Helper()
	if maxChars == 0 {
		maxChars = DefaultMaxChars
	}
	bounds := map[int]bool{len(text): true}
	state := -1
	for pos := 0; pos < len(text); {
		bounds[pos] = true
		var c string
		c, _, _, state = uniseg.FirstGraphemeClusterInString(text[pos:], state)
		pos += len(c)
	}
	cur := 0
	for _, c := range chunks {
		if c == "" || trim(c) != c {
			t.Fatalf("chunk %q empty or untrimmed", c)
		}
		if n := utf8.RuneCountInString(c); n > maxChars && uniseg.GraphemeClusterCount(c) > 1 {
			t.Fatalf("chunk of %d runes > %d: %q", n, maxChars, c)
		}
		i := strings.Index(text[cur:], c)
		if i < 0 || strings.TrimSpace(text[cur:cur+i]) != "" {
			t.Fatalf("chunk %q is not the next part of the text", c)
		}
		if !bounds[cur+i] || !bounds[cur+i+len(c)] {
			t.Fatalf("chunk %q cuts a grapheme cluster", c)
		}
		cur += i + len(c)
	}
	if strings.TrimSpace(text[cur:]) != "" {
		t.Fatalf("text after the last chunk lost: %q", text[cur:])
	}
	if strings.Join(strings.Fields(strings.Join(chunks, " ")), "") != strings.Join(strings.Fields(text), "") {
		t.Fatal("non-space content not preserved")
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"今天天气很好。我们去公园散步吧！", "Hello. World!\n\nNew paragraph?", "e\u0301\u0301\u0301x", " \u0301 ",
		"3.14. 。。。”」 ", "a\r\nb\r\n\r\nc", "\xff\xfe. x", strings.Repeat("长", 40),
	} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%64 + 1
		if max < 1 {
			max = -max + 1
		}
		chunks, err := Split(s, Options{MaxChars: max})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s, chunks, max)
	})
}

func TestSplitLongUnbrokenText(t *testing.T) {
	// One 300k-rune "sentence": must be cut linearly, not re-scanned per chunk.
	text := strings.Repeat("记忆", 150000)
	got, err := Split(text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1000 {
		t.Fatalf("%d chunks, want 1000", len(got))
	}
	if !testing.Short() {
		checkInvariants(t, text, got, 0)
	}
}

func BenchmarkSplit(b *testing.B) {
	text := strings.Repeat("Engram keeps memories on the user's machine. 记忆不离开本机。\n", 1000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(text, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
