package memory

import (
	"testing"

	"github.com/engramdb/engram/memory/lexical"
)

// TestDedupGolden: with the default lexical embedder and threshold, near-duplicates (the same
// fact re-said with small edits) merge and distinct facts, even on the same topic, stay apart.
func TestDedupGolden(t *testing.T) {
	cases := []struct {
		name, first, second string
		merge               bool
	}{
		{"en punctuation", "The user's favourite colour is blue.", "The user's favourite colour is blue!", true},
		{"en case and spacing", "Meeting with Anna moved to Friday at 10am.", "meeting with Anna moved to  Friday at 10am", true},
		{"en one word added", "The user is allergic to peanuts and shellfish.", "The user is allergic to peanuts and to shellfish.", true},
		{"en adverb added", "The user is allergic to peanuts and shellfish.", "The user is severely allergic to peanuts and shellfish.", true},
		{"en one name changed", "Remind me to call mom on Sunday evening.", "Remind me to call dad on Sunday evening.", false},
		{"en different fact", "The user's favourite colour is blue.", "The user's car is a red Toyota.", false},
		{"en same topic, other value", "The user lives in Berlin.", "The user was born in Madrid.", false},
		{"zh punctuation", "用户最喜欢的颜色是蓝色。", "用户最喜欢的颜色是蓝色！", true},
		{"zh particle", "我明天下午三点和王经理开会。", "我明天下午三点要和王经理开会。", true},
		{"zh one name changed", "提醒我周日晚上给妈妈打电话。", "提醒我周日晚上给爸爸打电话。", false},
		{"zh different fact", "用户最喜欢的颜色是蓝色。", "用户的汽车是红色的丰田。", false},
		{"zh same topic, other value", "用户住在北京。", "用户出生在上海。", false},
		{"mixed", "项目 deadline 是 3 月 15 日。", "项目 deadline 是 3 月 15 日", true},
	}
	emb, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		s, _ := newTestStore(t, Options{Embedder: emb})
		a := mustRemember(t, s, "u", c.first, RememberOptions{Importance: 0.2})
		b := mustRemember(t, s, "u", c.second, RememberOptions{Importance: 0.9})
		vs, _ := s.embed(ctx, emb, []string{c.first, c.second})
		sim := 0.0
		for i := range vs[0] {
			sim += float64(vs[0][i] * vs[1][i])
		}
		t.Logf("%s: cosine %.3f", c.name, sim)
		n, _ := s.Count(ctx, nil)
		if b.Merged[0] != c.merge || (n == 1) != c.merge {
			t.Errorf("%s: cosine %.3f, merged %v (%d memories), want merged %v", c.name, sim, b.Merged[0], n, c.merge)
			continue
		}
		if c.merge {
			ms, _ := s.Get(ctx, a.IDs[0])
			if b.IDs[0] != a.IDs[0] || ms[0].Text != c.second || ms[0].Importance != 0.9 || ms[0].Created.IsZero() {
				t.Errorf("%s: merge did not update the memory: %+v", c.name, ms[0])
			}
		}
		// Another session never merges.
		if r := mustRemember(t, s, "other", c.second, RememberOptions{}); r.Merged[0] {
			t.Errorf("%s: merged across sessions", c.name)
		}
	}
}
