package memorytest

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// currentCases test current facts: supersede detection when a memory is written, stale
// memories at recall, AsOf, decay on old memories and the default score floors.
var currentCases = []struct {
	name string
	fn   func(*testing.T, func(*testing.T) memory.Backend)
}{
	{"SupersedeGoldens", testSupersedeGoldens},
	{"StaleRanksBelowSuccessor", testStaleRanksBelowSuccessor},
	{"SupersedePolicies", testSupersedePolicies},
	{"AsOf", testAsOf},
	{"DecayOrdersOldMemories", testDecayOrdersOldMemories},
	{"MinScoreDefaults", testMinScoreDefaults},
	{"LifeLogs", testLifeLogs},
}

// background are unrelated facts of the session each supersede golden runs in, so that
// detection has to pick the right memory among several.
var background = []string{
	"My dentist is Dr. Alvarez on King Street.",
	"The car is a grey Honda Civic from 2016.",
	"Book club picks this month: 'Piranesi' by Susanna Clarke.",
	"我的猫叫团子，是一只橘猫。",
	"家里的路由器密码贴在冰箱上。",
	"每个月15号交房租。",
}

// supersedeGoldens: pairs of memories written a day apart; supersede says whether the second
// must supersede the first (in place, as a near-duplicate, or as a memory of its own).
var supersedeGoldens = []struct {
	name, first, second string
	supersede           bool
}{
	// A changed fact, announced or not, sharing little beyond its subject.
	{"en moved appointment", "My physiotherapy appointment is on Tuesday at 3 pm.", "The physio moved my appointment to Thursday at 10 am.", true},
	{"en moved house", "I live in Leeds, in a flat near the university.", "We moved to York last month.", true},
	{"en quit job", "I work as a nurse at St. Mary's Hospital.", "I quit the hospital job and now work as a pharmacist.", true},
	{"en no longer", "I drink three cups of coffee a day.", "I no longer drink coffee, only green tea.", true},
	{"en price raised", "My gym membership costs €40 a month.", "The gym raised the membership fee to €45 a month.", true},
	{"en switched day", "Choir practice is on Monday evenings at the church hall.", "Choir practice switched to Wednesday evenings.", true},
	{"en time now", "My train to Glasgow leaves at 7:15 on Friday.", "The train to Glasgow now leaves at 8:05 on Friday.", true},
	{"en cancelled", "Flight to Rome on May 3 with Ryanair, seat 14A.", "The Rome flight was cancelled.", true},
	{"en correction", "My new manager is Priya Shah.", "Correction: my manager's surname is Patel, not Shah, so Priya Patel.", true},
	{"en not anymore", "I'm vegan.", "I eat fish again, so I'm not vegan anymore.", true},
	{"en sister moved", "My sister lives in Boston.", "My sister moved to Chicago in March.", true},
	{"en near-duplicate date", "The team offsite is at the lake house on June 12.", "The team offsite is at the lake house on June 14.", true},
	{"zh 不再", "我每天早上喝两杯咖啡。", "我现在不喝咖啡了，改喝绿茶。", true},
	{"zh 搬到", "我住在海淀区的一个老小区。", "上个月搬到朝阳区了，新家离地铁站很近。", true},
	{"zh 改到", "周三晚上七点上瑜伽课。", "瑜伽课改到周五晚上八点了。", true},
	{"zh 涨到", "健身房年卡是2999元。", "健身房年卡涨到3299元了。", true},
	{"zh 离职", "我在星河科技做产品经理。", "已经从星河科技离职了，下个月去云帆网络报到。", true},
	{"zh 取消", "下周二去上海出差。", "上海出差取消了。", true},
	{"zh 其实是", "表哥的生日是3月8日。", "我记错了，表哥的生日其实是3月18日。", true},
	{"zh 换成", "家里的宽带是电信的，每个月100块。", "宽带换成联通的了，每个月80块。", true},
	// Written after the rules above, as a check of how they generalise (15 of 18 such changes
	// found, no false supersede among 12 pairs; missed and left alone: "We have a new landlord
	// now, Mrs. Lindqvist" for "My landlord is Mr. Okafor", "I started cycling to work instead of
	// taking the bus" for "I commute by bus", "Luigi's closed, so my favourite place is now ...").
	{"en changed password", "Our wifi password is tulip-2291.", "I changed the wifi password to maple-8830.", true},
	{"en school now starts", "My son's school starts at 8:30.", "My son's school now starts at 8:15.", true},
	{"en not allergic after all", "I'm allergic to penicillin.", "Turns out I'm not allergic to penicillin after all.", true},
	{"en lessons moved", "The kids' swimming lessons are on Saturday mornings.", "Swimming lessons moved to Sunday afternoons.", true},
	{"en dropped out", "I'm training for the Berlin half marathon in April.", "I dropped out of the Berlin half marathon because of my knee.", true},
	{"en new phone number", "My phone number is 0176 555 0142.", "My new phone number is 0152 555 0199.", true},
	{"en down to", "I weigh 82 kg.", "I'm down to 77 kg now.", true},
	{"en gave up violin", "My daughter is learning the violin.", "My daughter gave up the violin and is learning the cello now.", true},
	{"en meets from now on", "Our book club meets at Sam's place.", "Book club meets at the library from now on.", true},
	{"zh 新号码", "我的手机号是13800001111。", "我换了新号码，13900002222。", true},
	{"zh 改成每周四", "我每周二去游泳。", "游泳改成每周四了。", true},
	{"zh 四年级", "女儿在读小学三年级。", "女儿现在读四年级了。", true},
	{"zh 换成特斯拉", "我开的是一辆白色的丰田。", "我把丰田卖了，换成了一辆蓝色的特斯拉。", true},
	{"zh 公司搬到", "我们公司在望京。", "公司搬到亦庄了。", true},
	{"zh 其实是芝麻", "我对花生过敏。", "医生说我其实不是对花生过敏，是对芝麻过敏。", true},

	// Two facts that both stay true.
	{"en other person", "I like tea.", "My sister likes coffee.", false},
	{"en addition", "I like tea.", "I also like coffee.", false},
	{"en two people", "My brother Tom lives in Leeds.", "My friend Anna lives in York.", false},
	{"en outbound and return", "My flight to Lisbon leaves on June 12 at 21:40.", "The return flight from Lisbon is on June 22 at 11:50.", false},
	{"en two children", "Leo is 5 and goes to Oak Tree nursery.", "Mia is 8 and goes to Hillside Primary.", false},
	{"en another pill", "I take 50 mg of sertraline every morning.", "I take vitamin D every morning too.", false},
	{"en moved furniture", "We moved to Berlin in 2019.", "We moved the sofa into the living room.", false},
	{"en two activities", "My daughter's piano lesson is on Monday at 4 pm.", "My son's football practice is on Monday at 5 pm.", false},
	{"en unrelated switch", "I use Spotify for music.", "I switched my phone plan to Vodafone.", false},
	{"en engaged partner", "Daniel works as a nurse at St. Michael's.", "Daniel and I got engaged last night.", false},
	{"en chat message", "I love hiking in the mountains.", "Thanks, Gina! Actually I went hiking again yesterday, it was amazing!", false},
	{"zh 别人", "我喜欢喝茶。", "我妹妹喜欢喝咖啡。", false},
	{"zh 也", "我喜欢喝茶。", "我也喜欢喝咖啡。", false},
	{"zh 两件事", "周一下午三点开周会。", "周五下午要去机场接我妈。", false},
	{"zh 老公", "我在腾讯上班。", "我老公在阿里上班。", false},
	{"zh 往返", "去北京的高铁是8月8号早上8点。", "从北京回来的高铁是8月12号晚上7点。", false},
	{"zh 搬家以后", "我住在朝阳区。", "搬家以后上班要坐地铁。", false},
	{"en neighbour", "My landlord is Mr. Okafor.", "My neighbour is Mr. Okafor's brother.", false},
	{"en bus late", "I commute by bus, the number 42.", "The number 42 bus was late today.", false},
	{"en daughter's school", "My son's school starts at 8:30.", "My daughter's school starts at 8:45.", false},
	{"en also allergic", "I'm allergic to penicillin.", "I'm also allergic to cats.", false},
	{"en suitcase weight", "I weigh 82 kg.", "My suitcase weighed 23 kg at the airport.", false},
	{"en favourite film", "My favourite restaurant is Luigi's.", "My favourite film is Amélie.", false},
	{"en office wifi", "Our wifi password is tulip-2291.", "The office wifi password is orchid-7777.", false},
	{"en played yesterday", "I play tennis on Thursdays.", "I played tennis with Marco yesterday and won.", false},
	{"zh 爬山", "我每周二去游泳。", "我每周六去爬山。", false},
	{"zh 老婆的车", "我开的是一辆白色的丰田。", "我老婆开的是一辆红色的本田。", false},
	{"zh 儿子", "女儿在读小学三年级。", "儿子在上幼儿园大班。", false},
	{"zh 也有办公室", "我们公司在望京。", "我们公司在亦庄也有一个办公室。", false},
}

func testSupersedeGoldens(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	emb := mustLexical(t)
	for _, c := range supersedeGoldens {
		s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: emb})
		now := clk.Now()
		for i, b := range background {
			Remember(t, s, "u", b, memory.RememberOptions{Time: now.Add(-time.Duration(30-i) * day)})
		}
		a := Remember(t, s, "u", c.first, memory.RememberOptions{Time: now.Add(-2 * day)})
		b := Remember(t, s, "u", c.second, memory.RememberOptions{Time: now.Add(-day)})
		inPlace := b.Merged[0] && b.Superseded[0] && b.IDs[0] == a.IDs[0]
		linked := b.Supersedes[0] == a.IDs[0]
		if got := inPlace || linked; got != c.supersede {
			t.Errorf("%s: superseded %v, want %v (%+v)", c.name, got, c.supersede, b)
			continue
		}
		if !c.supersede {
			if b.Supersedes[0] != "" || b.Superseded[0] {
				t.Errorf("%s: the second memory superseded another one: %+v", c.name, b)
			}
			continue
		}
		if linked {
			m, err := s.Lookup(ctx, a.IDs[0])
			if err != nil || m.SupersededBy != b.IDs[0] || !m.SupersededAt.Equal(now.Add(-day)) || m.Text != c.first {
				t.Fatalf("%s: superseded memory %+v %v", c.name, m, err)
			}
			vs, err := s.History(ctx, a.IDs[0])
			if err != nil || len(vs) != 1 || vs[0].Change != memory.ChangeSupersede || vs[0].By != b.IDs[0] || vs[0].Memory.SupersededBy != "" {
				t.Fatalf("%s: history %+v %v", c.name, vs, err)
			}
		}
	}
	// Detection can be turned off per call and per store.
	s, _ := NewStore(t, newBackend(t), memory.Options{Embedder: emb})
	Remember(t, s, "u", "I drink three cups of coffee a day.", memory.RememberOptions{})
	if r := Remember(t, s, "u", "I no longer drink coffee, only green tea.", memory.RememberOptions{NoSupersede: true}); r.Supersedes[0] != "" {
		t.Fatalf("NoSupersede: %+v", r)
	}
	s, _ = NewStore(t, newBackend(t), memory.Options{Embedder: emb, NoSupersede: true})
	Remember(t, s, "u", "I drink three cups of coffee a day.", memory.RememberOptions{})
	if r := Remember(t, s, "u", "I no longer drink coffee, only green tea.", memory.RememberOptions{}); r.Supersedes[0] != "" {
		t.Fatalf("Options.NoSupersede: %+v", r)
	}
	// Another session is never superseded, and a conversation turn (with a Context) neither
	// supersedes nor is superseded.
	s, _ = NewStore(t, newBackend(t), memory.Options{Embedder: emb})
	Remember(t, s, "other", "I drink three cups of coffee a day.", memory.RememberOptions{})
	Remember(t, s, "u", "I drink three cups of coffee a day.", memory.RememberOptions{Context: "what do you drink?"})
	if r := Remember(t, s, "u", "I no longer drink coffee, only green tea.", memory.RememberOptions{}); r.Supersedes[0] != "" {
		t.Fatalf("superseded another session's memory or a turn: %+v", r)
	}
}

// testStaleRanksBelowSuccessor: a question that matches the old fact's words better still gets
// the newer fact first, and the successor comes back even when it shares no word with the
// question; forgetting the successor makes the old fact current again.
func testStaleRanksBelowSuccessor(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	now := clk.Now()
	Remember(t, s, "u", "Book club picks this month: 'Piranesi' by Susanna Clarke.", memory.RememberOptions{Time: now.Add(-100 * day)})
	old := Remember(t, s, "u", "Physio with Marta for my left shoulder is every Monday at 8:00 am at the Danforth clinic.", memory.RememberOptions{Time: now.Add(-90 * day)})
	newer := Remember(t, s, "u", "Marta reshuffled her schedule, so my sessions are now Wednesdays at 5:45 pm.", memory.RememberOptions{Time: now.Add(-30 * day)})
	if newer.Supersedes[0] != old.IDs[0] {
		t.Fatalf("not superseded: %+v", newer)
	}
	rs, err := s.Recall(ctx, "When is my physio for the left shoulder at the Danforth clinic?", memory.RecallOptions{Session: "u", NoTouch: true})
	if err != nil || len(rs) < 2 {
		t.Fatalf("%v %q", err, Texts(rs))
	}
	if rs[0].ID != newer.IDs[0] || rs[0].Stale || !slices.Equal(rs[0].Replaces, old.IDs) {
		t.Fatalf("the newer fact is not first: %q %+v", Texts(rs), rs[0])
	}
	if rs[1].ID != old.IDs[0] || !rs[1].Stale || rs[1].Newer != newer.IDs[0] || rs[1].SupersededBy != newer.IDs[0] || rs[1].Score.Current != memory.StalePenalty {
		t.Fatalf("the stale fact is not second and marked: %+v", rs[1])
	}
	for _, r := range rs {
		if sc := r.Score; math.Abs(sc.Final-min(1, sc.Fused*sc.Decay*sc.Weight*sc.Current)) > 1e-12 {
			t.Fatalf("score parts do not multiply: %+v", sc)
		}
	}
	// The successor that shares no word with the question takes the old fact's relevance.
	rs, _ = s.Recall(ctx, "Danforth clinic shoulder", memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) < 2 || rs[0].ID != newer.IDs[0] || rs[0].Score.Keyword != 0 || rs[0].Score.Fused != rs[1].Score.Fused {
		t.Fatalf("successor not brought in: %q %+v", Texts(rs), rs)
	}
	// The prompt says which is newer.
	p, err := memory.BuildPrompt("physio", rs, memory.PromptOptions{})
	if err != nil || !strings.Contains(p.Text, "outdated: see [1]") || !strings.Contains(p.Text, "newer than [2]") {
		t.Fatalf("prompt:\n%s", p.Text)
	}
	// Forgetting the successor makes the old fact current again.
	if _, err := s.Forget(ctx, newer.IDs...); err != nil {
		t.Fatal(err)
	}
	rs, _ = s.Recall(ctx, "Danforth clinic shoulder", memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) != 1 || rs[0].ID != old.IDs[0] || rs[0].Stale || rs[0].Score.Current != 1 {
		t.Fatalf("after forgetting the successor: %+v", rs)
	}
}

// testSupersedePolicies: hide leaves stale memories out, keep ranks them by their own score;
// a conflict nobody recorded puts the newer first when the two are about as relevant.
func testSupersedePolicies(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	now := clk.Now()
	old := Remember(t, s, "u", "Choir practice is on Monday evenings at the church hall.", memory.RememberOptions{Time: now.Add(-60 * day)})
	newer := Remember(t, s, "u", "Choir practice switched to Wednesday evenings.", memory.RememberOptions{Time: now.Add(-20 * day)})
	if newer.Supersedes[0] != old.IDs[0] {
		t.Fatalf("not superseded: %+v", newer)
	}
	q := "choir practice church hall"
	rs, _ := s.Recall(ctx, q, memory.RecallOptions{Session: "u", NoTouch: true, Superseded: memory.SupersededHide})
	if len(rs) != 1 || rs[0].ID != newer.IDs[0] {
		t.Fatalf("hide: %+v", rs)
	}
	rs, _ = s.Recall(ctx, q, memory.RecallOptions{Session: "u", NoTouch: true, Superseded: memory.SupersededKeep})
	if len(rs) == 0 || rs[0].ID != old.IDs[0] || !rs[0].Stale || rs[0].Newer != newer.IDs[0] || rs[0].Score.Current != 1 {
		t.Fatalf("keep: %+v", rs)
	}
	if _, err := s.Recall(ctx, q, memory.RecallOptions{Session: "u", Superseded: 7}); err == nil {
		t.Fatal("unknown policy accepted")
	}
	// A wrong supersede is undone by Update (Current) or by reverting to the version before it.
	m, err := s.Update(ctx, old.IDs[0], memory.UpdateOptions{Current: true})
	if err != nil || m.SupersededBy != "" || !m.SupersededAt.IsZero() {
		t.Fatalf("Update Current: %+v %v", m, err)
	}
	rs, _ = s.Recall(ctx, q, memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) == 0 || rs[0].ID != old.IDs[0] || rs[0].Stale {
		t.Fatalf("after Update Current: %+v", rs)
	}
	s4, _ := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	o4 := Remember(t, s4, "u", "Choir practice is on Monday evenings at the church hall.", memory.RememberOptions{Time: now.Add(-60 * day)})
	Remember(t, s4, "u", "Choir practice switched to Wednesday evenings.", memory.RememberOptions{Time: now.Add(-20 * day)})
	if m, err := s4.Revert(ctx, o4.IDs[0], 1); err != nil || m.SupersededBy != "" {
		t.Fatalf("Revert to before the supersede: %+v %v", m, err)
	}

	// Written without detection, the conflict is found at recall.
	s2, _ := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t), NoSupersede: true})
	o2 := Remember(t, s2, "u", "Choir practice is on Monday evenings at the church hall.", memory.RememberOptions{Time: now.Add(-60 * day)})
	n2 := Remember(t, s2, "u", "Choir practice at the church hall switched to Wednesday evenings.", memory.RememberOptions{Time: now.Add(-20 * day)})
	rs, _ = s2.Recall(ctx, "choir practice church hall evenings", memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) != 2 || rs[0].ID != n2.IDs[0] || rs[1].ID != o2.IDs[0] || !rs[1].Stale || rs[1].Newer != n2.IDs[0] || rs[1].SupersededBy != "" {
		t.Fatalf("unrecorded conflict: %+v", rs)
	}
	// Nothing contradicts an old fact of another kind: it keeps its rank.
	s3, _ := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	a := Remember(t, s3, "u", "Choir practice is on Monday evenings at the church hall.", memory.RememberOptions{Time: now.Add(-300 * day)})
	Remember(t, s3, "u", "The church hall has a new piano.", memory.RememberOptions{Time: now.Add(-day)})
	rs, _ = s3.Recall(ctx, "choir practice church hall", memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) == 0 || rs[0].ID != a.IDs[0] || rs[0].Stale {
		t.Fatalf("an old fact nothing contradicts lost its place: %+v", rs)
	}
}

// testAsOf: a recall as of a past time answers from what was true then.
func testAsOf(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
	now := clk.Now()
	t1, t2, t3 := now.Add(-90*day), now.Add(-60*day), now.Add(-30*day)
	old := Remember(t, s, "u", "I live in Leeds, in a flat near the university.", memory.RememberOptions{Time: t1})
	moved := Remember(t, s, "u", "We moved to York, into a house by the river.", memory.RememberOptions{Time: t2})
	if moved.Supersedes[0] != old.IDs[0] {
		t.Fatalf("not superseded: %+v", moved)
	}
	// A near-duplicate changes a value in place at t3.
	const dentist1, dentist2 = "The dentist appointment for the yearly checkup is on 2026-05-03 at the clinic downtown.",
		"The dentist appointment for the yearly checkup is on 2026-05-05 at the clinic downtown."
	f1 := Remember(t, s, "u", dentist1, memory.RememberOptions{Time: t1})
	f2 := Remember(t, s, "u", dentist2, memory.RememberOptions{Time: t3})
	if f2.IDs[0] != f1.IDs[0] || !f2.Superseded[0] {
		t.Fatalf("near-duplicate did not supersede in place: %+v", f2)
	}
	q := "where do I live, in a flat or a house?"
	// Now: York first, Leeds stale.
	rs, _ := s.Recall(ctx, q, memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) < 2 || rs[0].ID != moved.IDs[0] || rs[1].ID != old.IDs[0] || !rs[1].Stale {
		t.Fatalf("now: %+v", rs)
	}
	// Before the move: Leeds, current; York did not exist yet.
	rs, _ = s.Recall(ctx, q, memory.RecallOptions{Session: "u", NoTouch: true, AsOf: t2.Add(-day)})
	if len(rs) != 1 || rs[0].ID != old.IDs[0] || rs[0].Stale || rs[0].Score.Current != 1 {
		t.Fatalf("as of before the move: %+v", rs)
	}
	if want := 0.5 + 0.5*(0.8*math.Pow(0.9, 29)+0.2*math.Exp2(-29.0/365)); math.Abs(rs[0].Score.Decay-want) > 1e-12 {
		t.Fatalf("as-of decay %v, want %v (age counted to AsOf)", rs[0].Score.Decay, want)
	}
	// The appointment as it was before its date changed, from its history.
	rs, _ = s.Recall(ctx, "dentist checkup", memory.RecallOptions{Session: "u", NoTouch: true, AsOf: t3.Add(-day)})
	if len(rs) != 1 || rs[0].ID != f1.IDs[0] || rs[0].Text != dentist1 || !rs[0].Updated.Equal(t1) {
		t.Fatalf("as of before the in-place change: %+v", rs)
	}
	rs, _ = s.Recall(ctx, "dentist checkup", memory.RecallOptions{Session: "u", NoTouch: true})
	if len(rs) != 1 || rs[0].Text != dentist2 {
		t.Fatalf("now, after the in-place change: %+v", rs)
	}
	// Before anything: nothing.
	if rs, err := s.Recall(ctx, q, memory.RecallOptions{Session: "u", AsOf: t1.Add(-day)}); err != nil || len(rs) != 0 {
		t.Fatalf("as of before everything: %v %+v", err, rs)
	}
	if _, err := s.Recall(ctx, q, memory.RecallOptions{Session: "u", AsOf: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Fatal("AsOf outside the times a store holds accepted")
	}
}

// testDecayOrdersOldMemories: of two equally relevant memories of two and nine months, the
// newer ranks first (the default decay's slow part), and neither loses more than half its score.
func testDecayOrdersOldMemories(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, clk := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1, NoSupersede: true})
	now := clk.Now()
	nine := Remember(t, s, "d", "the bike lock code is on the fridge", memory.RememberOptions{Time: now.Add(-270 * day)})
	two := Remember(t, s, "d", "the bike lock code is on the fridge", memory.RememberOptions{Time: now.Add(-60 * day)})
	rs, err := s.Recall(ctx, "bike lock code", memory.RecallOptions{Session: "d", NoTouch: true})
	if err != nil || len(rs) != 2 || rs[0].ID != two.IDs[0] || rs[1].ID != nine.IDs[0] {
		t.Fatalf("%v %+v", err, rs)
	}
	if !(rs[0].Score.Decay > rs[1].Score.Decay && rs[1].Score.Decay > memory.DefaultDecayFloor) {
		t.Fatalf("decays %v, %v: want both above the floor, the newer higher", rs[0].Score.Decay, rs[1].Score.Decay)
	}
	// Very old memories still sit above the floor, so decay never more than halves a score.
	s2, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1})
	Remember(t, s2, "d", "the bike lock code is on the fridge", memory.RememberOptions{Time: now.Add(-20 * 365 * day)})
	rs, _ = s2.Recall(ctx, "bike lock code", memory.RecallOptions{Session: "d", NoTouch: true})
	if len(rs) != 1 || rs[0].Score.Decay < memory.DefaultDecayFloor || rs[0].Score.Decay > memory.DefaultDecayFloor+0.001 {
		t.Fatalf("20-year-old memory: decay %v", rs[0].Score.Decay)
	}
}

// testMinScoreDefaults: by default a recall returns nothing under DefaultMinScore or under
// DefaultMinRelative of its best result; negative values turn either floor off.
func testMinScoreDefaults(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	s, _ := NewStore(t, newBackend(t), memory.Options{DedupThreshold: -1, Embedder: mustLexical(t)})
	Remember(t, s, "m", "The quarterly budget review with finance is on Thursday in room 4.", memory.RememberOptions{})
	Remember(t, s, "m", "Budget airlines charge for carry-on bags now.", memory.RememberOptions{})
	for i := range 8 {
		Remember(t, s, "m", strings.Repeat("budget ", 1)+"note "+strings.Repeat("x", i+1)+" about the garden, the weather, the neighbours and the long walks by the canal on sunday afternoons", memory.RememberOptions{})
	}
	q := "quarterly budget review with finance"
	all, err := s.Recall(ctx, q, memory.RecallOptions{Session: "m", K: 20, NoTouch: true, MinScore: -1, MinRelative: -1})
	if err != nil || len(all) != 10 {
		t.Fatalf("without floors: %v %d results", err, len(all))
	}
	def, err := s.Recall(ctx, q, memory.RecallOptions{Session: "m", K: 20, NoTouch: true})
	if err != nil || len(def) == 0 || len(def) >= len(all) {
		t.Fatalf("defaults kept %d of %d", len(def), len(all))
	}
	best := def[0].Score.Final
	for _, r := range def {
		if r.Score.Final < memory.DefaultMinScore || r.Score.Final < memory.DefaultMinRelative*best {
			t.Fatalf("result under the default floors: %+v (best %v)", r.Score, best)
		}
	}
	for _, r := range all[len(def):] {
		if r.Score.Final >= memory.DefaultMinScore && r.Score.Final >= memory.DefaultMinRelative*best {
			t.Fatalf("dropped a result over the floors: %+v (best %v)", r.Score, best)
		}
	}
	// An explicit floor replaces the default one.
	rs, _ := s.Recall(ctx, q, memory.RecallOptions{Session: "m", K: 20, NoTouch: true, MinScore: 0.99, MinRelative: -1})
	if len(rs) != 0 {
		t.Fatalf("MinScore 0.99 kept %+v", rs)
	}
	for _, o := range []memory.RecallOptions{{MinRelative: 1.5}, {MinRelative: math.NaN()}, {MinScore: math.Inf(1)}, {AttributeWeight: 2}, {Decay: memory.Decay{Slow: 2}}} {
		o.Session = "m"
		if _, err := s.Recall(ctx, q, o); err == nil {
			t.Fatalf("%+v accepted", o)
		}
	}
}

// lifeLogs are two users' notes over a few months, in time order, with the pairs (older index,
// newer index) where the newer note changes the older one's fact; no other pair may supersede.
var lifeLogs = []struct {
	name    string
	notes   []string
	changes [][2]int
}{
	{"en", []string{
		/* 0 */ "I work as a data analyst at Brightline Insurance in Leeds.",
		/* 1 */ "My partner Sam is a primary school teacher.",
		/* 2 */ "We rent a two-bed flat on Clarendon Road for £950 a month.",
		/* 3 */ "I cycle to work most days, it takes about 20 minutes.",
		/* 4 */ "Gym sessions are Tuesday and Thursday at 6:30 pm at PureGym.",
		/* 5 */ "I'm lactose intolerant, so oat milk in coffee please.",
		/* 6 */ "Our dog Pepper is a three-year-old spaniel.",
		/* 7 */ "Pepper's vet is Dr. Hughes at Hyde Park Vets.",
		/* 8 */ "Mum lives in Sheffield; I visit her every other Sunday.",
		/* 9 */ "My passport expires in March 2027.",
		/* 10 */ "Sam's birthday is on 14 August.",
		/* 11 */ "Booked a table at Ivy Asia for Sam's birthday dinner at 7:30 pm.",
		/* 12 */ "I'm learning Spanish on Duolingo, 15 minutes a day.",
		/* 13 */ "Car insurance renews on 1 June with Admiral.",
		/* 14 */ "The boiler service is booked for 12 May between 8 and 12.",
		/* 15 */ "Got a new job: from 3 June I'm a senior analyst at Northwind Health.",
		/* 16 */ "Sam wants a new bike for Christmas.",
		/* 17 */ "The gym moved my sessions to Monday and Wednesday at 7 pm.",
		/* 18 */ "Pepper had her booster jab today.",
		/* 19 */ "The landlord raised the rent to £1,000 a month from July.",
		/* 20 */ "Mum is coming to stay with us next weekend.",
		/* 21 */ "I switched off notifications for work email after 6 pm.",
		/* 22 */ "Booked the boiler service for 19 May instead, the engineer was ill.",
		/* 23 */ "Sam and I are thinking about moving to York next year.",
		/* 24 */ "The car needs new tyres before the MOT.",
		/* 25 */ "Sam's birthday dinner moved to 8 pm.",
		/* 26 */ "I cancelled my Netflix subscription.",
		/* 27 */ "Work is crazy busy this month, lots of late nights.",
	}, [][2]int{{0, 15}, {4, 17}, {2, 19}, {14, 22}, {11, 25}}},
	{"zh", []string{
		/* 0 */ "我在杭州的一家外贸公司做会计。",
		/* 1 */ "老公在医院当护士，经常上夜班。",
		/* 2 */ "我们住在西湖区文三路的一个老小区，月租4200。",
		/* 3 */ "每天坐公交上班，大概40分钟。",
		/* 4 */ "周二和周四晚上七点去健身房。",
		/* 5 */ "我对芒果过敏，点外卖记得备注。",
		/* 6 */ "女儿今年5岁，在星星幼儿园上中班。",
		/* 7 */ "我妈住在宁波，每个月回去看她一次。",
		/* 8 */ "护照明年3月到期。",
		/* 9 */ "女儿每周六上午十点上钢琴课。",
		/* 10 */ "家里的宽带是电信的，每个月100块。",
		/* 11 */ "国庆去厦门玩，10月2日的动车，早上八点出发。",
		/* 12 */ "老公想给女儿买一辆自行车。",
		/* 13 */ "钢琴课改到周日下午三点了。",
		/* 14 */ "房东说下个月开始房租涨到4500。",
		/* 15 */ "厦门的动车改成10月3日了，还是早上八点。",
		/* 16 */ "我妈下周来杭州住几天。",
		/* 17 */ "在考虑明年搬到滨江区。",
		/* 18 */ "宽带换成移动的了，每个月80块。",
		/* 19 */ "今天加班到很晚，好累。",
		/* 20 */ "女儿的幼儿园下周开家长会。",
	}, [][2]int{{9, 13}, {2, 14}, {11, 15}, {10, 18}}},
	{"mixed", []string{
		/* 0 */ "My phone number is 07700 900123.",
		/* 1 */ "I cycle to the office every day along the canal.",
		/* 2 */ "I'm seeing someone, his name is Marco.",
		/* 3 */ "The weekly team meeting is on Thursdays at 2 pm.",
		/* 4 */ "Our wedding is planned for Lisbon in September.",
		/* 5 */ "I drive a blue Ford Focus.",
		/* 6 */ "I have two sugars in my tea.",
		/* 7 */ "Our landlord is Mr. Green, he lives downstairs.",
		/* 8 */ "I'm allergic to cats.",
		/* 9 */ "Ella started swimming lessons on Saturday mornings.",
		/* 10 */ "My new number is 07700 900456.",
		/* 11 */ "These days I take the bus to the office instead of cycling.",
		/* 12 */ "Marco and I broke up last week.",
		/* 13 */ "The team meeting is now on Fridays at 3 pm.",
		/* 14 */ "Turns out the wedding will be in Porto, not Lisbon.",
		/* 15 */ "Sold the Ford Focus, we're car-free now.",
		/* 16 */ "I've given up sugar completely.",
		/* 17 */ "The building was sold, our landlord is now Ms. Ortiz.",
		/* 18 */ "Ella loves her swimming teacher.",
		/* 19 */ "We got a kitten called Miso.",
		/* 20 */ "我每周三晚上去上吉他课。",
		/* 21 */ "吉他课停了，老师回老家了。",
		/* 22 */ "儿子的班主任是刘老师。",
		/* 23 */ "儿子这学期换了班主任，现在是陈老师。",
	}, [][2]int{{0, 10}, {1, 11}, {2, 12}, {3, 13}, {4, 14}, {5, 15}, {6, 16}, {7, 17}, {20, 21}, {22, 23}}},
}

// testLifeLogs: detection over realistic notes marks exactly the changed facts.
func testLifeLogs(t *testing.T, newBackend func(*testing.T) memory.Backend) {
	for _, log := range lifeLogs {
		s, clk := NewStore(t, newBackend(t), memory.Options{Embedder: mustLexical(t)})
		start := clk.Now().Add(-time.Duration(len(log.notes)+1) * 3 * day)
		ids := make([]string, len(log.notes))
		got := map[[2]int]bool{}
		for i, n := range log.notes {
			r := Remember(t, s, "u", n, memory.RememberOptions{Time: start.Add(time.Duration(i) * 3 * day)})
			ids[i] = r.IDs[0]
			if old := r.Supersedes[0]; old != "" {
				got[[2]int{slices.Index(ids, old), i}] = true
			}
			if r.Merged[0] && r.Superseded[0] {
				got[[2]int{slices.Index(ids, r.IDs[0]), i}] = true
			}
		}
		for _, c := range log.changes {
			if !got[c] {
				t.Errorf("%s: %q did not supersede %q", log.name, log.notes[c[1]], log.notes[c[0]])
			}
			delete(got, c)
		}
		for c := range got {
			t.Errorf("%s: %q superseded %q", log.name, log.notes[c[1]], log.notes[c[0]])
		}
	}
}
