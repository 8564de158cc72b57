package memory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSentences: abbreviations, initials, decimals, ellipses and Chinese punctuation split where
// a reader would, and nowhere else.
func TestSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"My manager is Ms. Alvarez. She starts at 9.", []string{"My manager is Ms. Alvarez.", "She starts at 9."}},
		{"Mr. and Mrs. Smith met Dr. Chen at St. Mary's.", []string{"Mr. and Mrs. Smith met Dr. Chen at St. Mary's."}},
		{"I moved to the U.S. in 2019. It was cold.", []string{"I moved to the U.S. in 2019.", "It was cold."}},
		{"We moved to the U.S. It was cold.", []string{"We moved to the U.S.", "It was cold."}},
		{"He served in the U.S. Army for 3.5 years.", []string{"He served in the U.S. Army for 3.5 years."}},
		{"Bring fruit, e.g. apples. Or not.", []string{"Bring fruit, e.g. apples.", "Or not."}},
		{"The price went from $3.50 to 4.25 EUR... I was shocked.", []string{"The price went from $3.50 to 4.25 EUR...", "I was shocked."}},
		{"I was going to... never mind.", []string{"I was going to... never mind."}},
		{"Well… I think so!", []string{"Well…", "I think so!"}},
		{"J. K. Rowling wrote it. Really?! Yes.", []string{"J. K. Rowling wrote it.", "Really?!", "Yes."}},
		{`She said "I'm done." Then she left.`, []string{`She said "I'm done."`, "Then she left."}},
		{"Visit example.com at 10 a.m. tomorrow.", []string{"Visit example.com at 10 a.m. tomorrow."}},
		{"It is at 10 a.m. We should leave early.", []string{"It is at 10 a.m.", "We should leave early."}},
		{"Room No. 5 is mine; yours is 6", []string{"Room No. 5 is mine;", "yours is 6"}},
		{"apples, pears, etc. I like them all", []string{"apples, pears, etc.", "I like them all"}},
		{"我住在成都。你呢？我们下周二见！好的；明天……再说", []string{"我住在成都。", "你呢？", "我们下周二见！", "好的；", "明天……", "再说"}},
		{"他说：“好。”然后走了。", []string{"他说：“好。”", "然后走了。"}},
		{"line one\nline two", []string{"line one", "line two"}},
		{"  ", nil},
	} {
		if got := sentences(c.in); !slices.Equal(got, c.want) {
			t.Errorf("sentences(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestSmallTalk(t *testing.T) {
	for _, s := range []string{"haha ok", "lol", "Thanks!", "Nice to meet you, Alex!", "I'll remember that.",
		"Got it, I'll keep that in mind.", "That sounds great, thank you so much!", "好的，我记住了。", "哈哈哈", "谢谢你！",
		"很高兴认识你！", "I'm fine", "Let me know if you need anything else!", "How are you today?", "See you tomorrow!"} {
		if !smallTalk(s) {
			t.Errorf("smallTalk(%q) = false", s)
		}
	}
	for _, s := range []string{"I'm Alex.", "I'm vegan.", "My sister lives in Lisbon.", "Call me at 5.", "我不喝咖啡。",
		"我叫李明。", "Sam agreed to the plan", "It costs 20"} {
		if smallTalk(s) {
			t.Errorf("smallTalk(%q) = true", s)
		}
	}
}

// FuzzSentences: any text splits without panicking, into trimmed non-empty sentences that
// together hold every non-space character of the text, in order.
func FuzzSentences(f *testing.F) {
	for _, s := range []string{"Ms. Alvarez. U.S. e.g. 3.5...", "我住在成都。你呢？……", "a.b. c", "No. 5", "etc.", "\"Hi.\" Then", "...", "J. K."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
		var got strings.Builder
		for _, s := range sentences(text) {
			if s == "" || s != strings.TrimSpace(s) {
				t.Fatalf("sentence %q", s)
			}
			got.WriteString(s)
		}
		if squash(got.String()) != squash(string([]rune(text))) {
			t.Fatalf("sentences of %q lose text: %q", text, sentences(text))
		}
	})
}

// FuzzRuleDistiller: any turn distills without panicking into adds of non-blank valid text.
func FuzzRuleDistiller(f *testing.F) {
	for _, s := range []string{"Haha ok, so I'm Alex. My sister Jenna lives in Portland.", "哈哈，好的，我叫王芳。", "No, it's 5.", "Big news: I", ", ,", "I'm"} {
		f.Add("user", s)
	}
	f.Fuzz(func(t *testing.T, role, text string) {
		props, err := RuleDistiller{}.Distill(context.Background(), DistillInput{Turns: []Turn{{Role: role, Text: text}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range props {
			if p.Event != EventAdd || strings.TrimSpace(p.Text) == "" || (utf8.ValidString(role+text) && !utf8.ValidString(p.Text)) {
				t.Fatalf("proposal %+v of %q", p, text)
			}
		}
	})
}
