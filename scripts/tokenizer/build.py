#!/usr/bin/python3
"""Trains small sentencepiece Unigram models and converts them to HuggingFace
tokenizer.json files; writes the golden test strings.

Run with Debian's python3-sentencepiece (/usr/bin/python3, not a venv python):

    /usr/bin/python3 scripts/tokenizer/build.py WORKDIR

WORKDIR (outside the repo or under the ignored .cache/) receives the training
corpus, the .model files, raw tokenizer.json files per variant and
strings.jsonl. golden.js then loads each raw tokenizer.json with HuggingFace's
tokenizers, re-saves it in HF's own serialization and writes the goldens.
Everything is seeded: the same inputs give the same outputs. (Retraining
tiny.model from scratch gave the committed pieces and scores exactly; the
.model bytes differ only in the file paths trainer_spec records.)
"""
import base64
import gzip
import json
import os
import random
import sys

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "datasets", "text")

JA_WORDS = """私 僕 あなた 彼女 東京 大阪 京都 日本語 勉強 学校 先生 学生 会社 電車 新幹線 天気 今日 明日 昨日
ありがとう こんにちは こんばんは おはよう すみません 食べる 飲む 行く 来る 見る 書く 読む 話す 聞く
です ます でした ません ください 寿司 ラーメン コーヒー テレビ コンピューター インターネット データベース
メモリ 検索 記憶 人工知能 機械学習 東京タワー 富士山 桜 猫 犬 本 水 山 川 海 空 雨 雪 春 夏 秋 冬
ｶﾀｶﾅ ﾃｽﾄ ﾊﾟﾝ ｶﾞｲﾄﾞ""".split()
JA_PARTICLES = "は が を に で と の も へ から まで より や".split()
KO_WORDS = """안녕하세요 감사합니다 한국어 서울 부산 학교 선생님 학생 회사 컴퓨터 인공지능 검색 기억 데이터
오늘 내일 어제 날씨 좋아요 먹다 마시다 가다 오다 보다 읽다 쓰다 사랑 친구 가족 음식 김치 비빔밥""".split()
HI_WORDS = """नमस्ते भारत हिन्दी भाषा विद्यालय शिक्षक छात्र कंप्यूटर स्मृति खोज ज्ञान विज्ञान क्षत्रिय त्रिकोण श्रम
धन्यवाद पानी आकाश पृथ्वी सूर्य चन्द्र प्रेम मित्र परिवार भोजन राष्ट्र संस्कृत""".split()
EMOJI = ["😀", "😂", "🥲", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "🇰🇷", "❤️", "❤",
         "1️⃣", "#️⃣", "🧑🏿‍🚀", "🤷‍♀️", "✈️", "☕", "🐈‍⬛", "🫠", "🧠", "🔥", "✅", "©️", "™"]
NFKC_HEAVY = ["ＡＢＣ", "ａｂｃ", "１２３", "！？", "ｶﾞｷﾞ", "ﬁ", "ﬂ", "ﬀ", "①②③", "㍿", "㌔", "℡", "ℌ", "𝐀𝐁𝐂",
              "𝕒𝕓", "½", "²³", "Ⅻ", "ⅷ", "㈱", "︙", "…", "＜ｓ＞", "　", "Ａ\u0301", "ﬁ\u0301", "ｶ\u3099",
              "\u1100\u1161\u11a8", "Å", "Å", "ǅ", "µ", "ſ", "ﷺ", "ẛ̣"]
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x85", "\u200b", "\u200c",
           "\u200d", "\u200e", "\u200f", "\u2028", "\u2029", "\ufeff", "\u00ad", "\u2060", "\ufffd", "\ufffe",
           "\U000e0001", "\u202e", "\r\n", "\r", "\t", "\n"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2003", " \t ", "\n\n", "    "]
SPECIAL = ["<s>", "</s>", "<pad>", "<unk>", "<mask>", " <mask>", "<mask> ", "<s></s>", "< s>", "<S>", "<mask"]
COMBINING = [chr(c) for c in range(0x300, 0x370)] + ["\u20dd", "\u0e31", "\u093c", "\u094d", "\u3099", "\u309a"]


def read_jsonl(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def load_texts():
    en, zh = [], []
    for rel in ("scifact/corpus.jsonl.gz", "cranfield/corpus.jsonl", "rgb/en_corpus.jsonl"):
        for d in read_jsonl(os.path.join(DATA, rel)):
            en.append((d.get("title", "") + " " + d["text"]).strip())
    for d in read_jsonl(os.path.join(DATA, "rgb/zh_corpus.jsonl.gz")):
        zh.append(d["text"])
    return en, zh


def kana(r, n):
    return "".join(chr(r.choice([r.randint(0x3041, 0x3093), r.randint(0x30a1, 0x30f3)])) for _ in range(n))


def japanese(r, zh_chars):
    out = []
    for _ in range(r.randint(2, 12)):
        k = r.random()
        if k < 0.5:
            out.append(r.choice(JA_WORDS))
        elif k < 0.7:
            out.append(kana(r, r.randint(1, 5)))
        else:
            out.append("".join(r.choice(zh_chars) for _ in range(r.randint(1, 3))))
        out.append(r.choice(JA_PARTICLES))
    return "".join(out) + r.choice(["。", "！", "？", "", "、"])


def hangul(r, n):
    return "".join(chr(0xAC00 + (r.randrange(19) * 21 + r.randrange(21)) * 28 + r.randrange(28)) for _ in range(n))


def korean(r):
    words = [r.choice(KO_WORDS) if r.random() < 0.6 else hangul(r, r.randint(1, 4)) for _ in range(r.randint(1, 10))]
    return " ".join(words) + r.choice([".", "?", "", "!"])


def devanagari(r):
    words = []
    for _ in range(r.randint(1, 8)):
        if r.random() < 0.6:
            words.append(r.choice(HI_WORDS))
        else:
            w = ""
            for _ in range(r.randint(1, 4)):
                w += chr(r.randint(0x915, 0x939))
                if r.random() < 0.1:
                    w += "\u093c"
                if r.random() < 0.3:
                    w += "\u094d" + chr(r.randint(0x915, 0x939))
                if r.random() < 0.5:
                    w += chr(r.choice([0x93e, 0x93f, 0x940, 0x941, 0x942, 0x947, 0x948, 0x94b, 0x94c, 0x902, 0x901]))
            words.append(w)
    return " ".join(words) + r.choice(["।", "", "?"])


def emoji(r):
    parts = []
    for _ in range(r.randint(1, 8)):
        parts.append(r.choice(EMOJI) if r.random() < 0.8 else chr(r.randint(0x1F300, 0x1FAFF)))
        if r.random() < 0.3:
            parts.append(r.choice([" ", "", "a", "很好", " ok "]))
    return "".join(parts)


def combining(r):
    if r.random() < 0.2:
        return r.choice(["cafe\u0301", "café", "Cafe\u0301 au lait", "nai\u0308ve", "e\u0301\u0301", "\u0301start",
                         "A\u030a", "o\u0308\u0304", "ñ vs n\u0303"])
    out = ""
    for _ in range(r.randint(1, 12)):
        out += chr(r.choice([r.randint(0x61, 0x7a), r.randint(0x41, 0x5a), r.randint(0xc0, 0x17f)]))
        for _ in range(r.choice([0, 0, 1, 1, 2, 3])):
            out += r.choice(COMBINING)
        if r.random() < 0.15:
            out += " "
    return out


def nfkc_changing_chars():
    """Characters NFKC rewrites: the ones the nmt_nfkc charsmap holds keys for."""
    import unicodedata
    out = []
    for c in range(0x80, 0x2FFFF):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        if unicodedata.normalize("NFKC", ch) != ch:
            out.append(ch)
    return out


GRAPHEME_TAILS = ["\u0301", "\u0308", "\u0301\u0323", "\u200d", "\ufe0f", "\ufe0e", "\U0001f3fd", "\u3099", "\u093c",
                  "\u094d", "\u0e31", "\u20e3", "\u200d\u2640", "\u0345", "\u1161", "\u11a8"]


def grapheme_stress(r, mapped):
    """A character the charsmap maps, followed by what can extend its grapheme
    cluster: exercises HF's whole-cluster replacement for clusters < 6 bytes."""
    out = ""
    for _ in range(r.randint(1, 4)):
        k = r.random()
        if k < 0.6:
            out += r.choice(mapped) + "".join(r.choice(GRAPHEME_TAILS) for _ in range(r.choice([0, 1, 1, 2, 3])))
        elif k < 0.7:
            out += "".join(chr(r.randint(0x1F1E6, 0x1F1FF)) for _ in range(r.randint(1, 5)))  # regional indicators
        elif k < 0.8:
            out += chr(r.randint(0x1100, 0x1112)) + chr(r.randint(0x1161, 0x1175)) + r.choice(["", chr(r.randint(0x11A8, 0x11C2))])
        elif k < 0.9:
            out += r.choice(["\r\n", "\r", "\n", " ", "\t"]) + r.choice(mapped)
        else:
            out += r.choice(["a", "e", "A", "1", "ｱ", "가"]) + "".join(r.choice(GRAPHEME_TAILS) for _ in range(r.randint(1, 3)))
        if r.random() < 0.3:
            out += " "
    return out


def random_char(r):
    while True:
        c = r.choice([r.randint(0x20, 0x7e), r.randint(0xa0, 0x2fff), r.randint(0x3000, 0xffff),
                      r.randint(0x10000, 0x1ffff), r.randint(0, 0x10ffff)])
        if not 0xd800 <= c <= 0xdfff:
            return chr(c)


def snippet(r, texts, lo, hi):
    t = r.choice(texts)
    n = r.randint(lo, hi)
    s = r.randint(0, max(0, len(t) - n))
    return t[s:s + n]


def mutate(r, s):
    """Sprinkles whitespace, control and NFKC-relevant characters into s."""
    out = []
    for ch in s:
        out.append(ch)
        k = r.random()
        if k < 0.03:
            out.append(r.choice(SPACES))
        elif k < 0.04:
            out.append(r.choice(CONTROL))
        elif k < 0.05:
            out.append(r.choice(NFKC_HEAVY))
    return "".join(out)


def make_strings(en, zh, n_total):
    r = random.Random(20261129)
    zh_chars = [c for c in "".join(zh[:300]) if "\u4e00" <= c <= "\u9fff"]
    gens = [
        (0.18, lambda: snippet(r, en, 1, 400)),
        (0.14, lambda: snippet(r, zh, 1, 200)),
        (0.07, lambda: japanese(r, zh_chars)),
        (0.07, lambda: korean(r)),
        (0.05, lambda: devanagari(r)),
        (0.05, lambda: emoji(r)),
        (0.05, lambda: combining(r)),
        (0.06, lambda: mutate(r, snippet(r, en, 1, 200))),
        (0.04, lambda: mutate(r, snippet(r, zh, 1, 100))),
        (0.05, lambda: "".join(r.choice(SPACES) if r.random() < 0.5 else r.choice(["a", "ab", "的", "x y", "안"]) for _ in range(r.randint(1, 12)))),
        (0.05, lambda: "".join(r.choice(NFKC_HEAVY) if r.random() < 0.6 else r.choice([" ", "a", "ｱ", "1"]) for _ in range(r.randint(1, 8)))),
        (0.04, lambda: "".join(r.choice(CONTROL) if r.random() < 0.5 else r.choice(["a", " ", "日本", "x"]) for _ in range(r.randint(1, 8)))),
        (0.07, lambda: " ".join(f() for f in r.sample([lambda: snippet(r, en, 1, 40), lambda: snippet(r, zh, 1, 20), lambda: japanese(r, zh_chars), lambda: korean(r), lambda: devanagari(r), lambda: emoji(r), lambda: combining(r)], 3))),
        (0.02, lambda: r.choice(["", " ", "a"]).join(r.choice(SPECIAL) if r.random() < 0.5 else r.choice(["hello", "你好", " ", "x"]) for _ in range(r.randint(1, 6)))),
        (0.06, lambda: "".join(random_char(r) for _ in range(r.randint(1, 6)))),
    ]
    mapped = nfkc_changing_chars()
    gens.append((0.15, lambda: grapheme_stress(r, mapped)))
    fixed = ["", " ", "  ", "\t", "\n", "\r\n", "a", "▁", "▁▁a", " ▁ ", "cafe\u0301", "café", "<s>", "<mask>", "hello world",
             "Hello  world", "  leading", "trailing  ", "tab\there", "new\nline", "ＦＵＬＬＷＩＤＴＨ", "👩‍👩‍👧‍👦",
             "नमस्ते दुनिया", "こんにちは世界", "안녕하세요 세계", "你好，世界！", "\x00", "\u200b", "a\u200bb"]
    strings = list(fixed)
    weights = [w for w, _ in gens]
    while len(strings) < n_total - 6:
        f = r.choices(gens, weights)[0][1]
        strings.append(f())
    # Very long texts: far beyond the 8192-token default truncation.
    for i in range(6):
        if i < 2:
            strings.append(" ".join(r.choice(en) for _ in range(40)))
        elif i < 4:
            strings.append("".join(r.choice(zh) for _ in range(60)))
        else:
            strings.append(" ".join(r.choice([japanese(r, zh_chars), korean(r), devanagari(r), emoji(r)]) for _ in range(700)))
    return strings


def write_corpus(path, en, zh):
    r = random.Random(7)
    zh_chars = [c for c in "".join(zh[:300]) if "\u4e00" <= c <= "\u9fff"]
    with open(path, "w", encoding="utf-8") as f:
        for t in en[:6000]:
            f.write(t.replace("\n", " ") + "\n")
        for t in zh[:6000]:
            f.write(t.replace("\n", " ") + "\n")
        for _ in range(3000):
            f.write(japanese(r, zh_chars) + "\n")
            f.write(korean(r) + "\n")
            f.write(devanagari(r) + "\n")
            f.write(emoji(r) + "\n")
            f.write(combining(r) + "\n")


def train(corpus, prefix, vocab_size, coverage, byte_fallback=False):
    """Trains prefix.model unless it exists (delete WORKDIR to retrain)."""
    if os.path.exists(prefix + ".model"):
        return prefix + ".model"
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        normalization_rule_name="nmt_nfkc", character_coverage=coverage, byte_fallback=byte_fallback,
        input_sentence_size=200000, shuffle_input_sentence=True, seed_sentencepiece_size=200000,
        num_threads=2, minloglevel=2)
    return prefix + ".model"


def proto_fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield field, wt, v


def varint(buf, i):
    shift = v = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def precompiled_charsmap(model_path):
    """ModelProto.normalizer_spec (3) .precompiled_charsmap (2); read without protobuf."""
    with open(model_path, "rb") as f:
        buf = f.read()
    for field, wt, v in proto_fields(buf):
        if field == 3 and wt == 2:
            for f2, wt2, v2 in proto_fields(v):
                if f2 == 2 and wt2 == 2:
                    return bytes(v2)
    return b""


def added(id_, content, lstrip=False, special=True, normalized=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": False,
            "normalized": normalized, "special": special}


def convert(model_path, variant):
    """Mirrors transformers' XLMRobertaConverter (fairseq id layout) with the
    normalizer/pre-tokenizer/post-processor of the given variant."""
    sp = spm.SentencePieceProcessor(model_file=model_path)
    n = sp.get_piece_size()
    # sentencepiece: <unk>=0 <s>=1 </s>=2; fairseq/XLM-R: <s>=0 <pad>=1 </s>=2 <unk>=3, then pieces[3:].
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[sp.id_to_piece(i), sp.get_score(i)] for i in range(3, n)]
    vocab.append(["<mask>", 0.0])
    mask_id = len(vocab) - 1
    charsmap = base64.b64encode(precompiled_charsmap(model_path)).decode("ascii")
    pre = {"type": "Precompiled", "precompiled_charsmap": charsmap}
    template = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                           "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}},
    }
    if variant == "xlmr":
        # transformers' current SpmConverter + XLMRobertaConverter.
        normalizer = {"type": "Sequence", "normalizers": [
            pre, {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"}]}
        pretok = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
        post = template
    elif variant == "legacy":
        # The layout of older XLM-R / BGE-M3 files: WhitespaceSplit + Metaspace(add_prefix_space), RobertaProcessing.
        normalizer = {"type": "Sequence", "normalizers": [
            pre, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
        pretok = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}]}
        post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
                "add_prefix_space": True}
    elif variant == "first":
        normalizer = pre
        pretok = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
        post = dict(template, single=[{"SpecialToken": {"id": "<s>", "type_id": 1}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "</s>", "type_id": 1}},
                                      {"SpecialToken": {"id": "</s>", "type_id": 1}}])
    elif variant == "never":
        normalizer = {"type": "Sequence", "normalizers": [
            pre, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            {"type": "Strip", "strip_left": True, "strip_right": True}]}
        pretok = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}
        post = template
    elif variant == "bytefb":
        normalizer = pre
        pretok = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
        post = template
    else:
        raise ValueError(variant)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(0, "<s>"), added(1, "<pad>"), added(2, "</s>"), added(3, "<unk>"),
                         # Older XLM-R files have a normalized <mask>: matched after normalization.
                         added(mask_id, "<mask>", lstrip=True, normalized=variant == "legacy")],
        "normalizer": normalizer,
        "pre_tokenizer": pretok,
        "post_processor": post,
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": variant == "bytefb"},
    }


def main():
    work = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".cache", "tokenizer"))
    os.makedirs(work, exist_ok=True)
    en, zh = load_texts()
    corpus = os.path.join(work, "corpus.txt")
    write_corpus(corpus, en, zh)
    models = {
        "main": train(corpus, os.path.join(work, "main"), 8000, 0.99),
        "tiny": train(corpus, os.path.join(work, "tiny"), 3000, 0.98),
        "bytefb": train(corpus, os.path.join(work, "bytefb"), 3000, 0.98, byte_fallback=True),
    }
    variants = {"xlmr": ("main", "xlmr"), "tiny": ("tiny", "xlmr"), "legacy": ("main", "legacy"),
                "first": ("main", "first"), "never": ("main", "never"), "bytefb": ("bytefb", "bytefb")}
    for name, (model, variant) in variants.items():
        with open(os.path.join(work, name + ".raw.json"), "w", encoding="utf-8") as f:
            json.dump(convert(models[model], variant), f, ensure_ascii=False)
    with open(os.path.join(work, "strings.jsonl"), "w", encoding="utf-8") as f:
        for s in make_strings(en, zh, 14000):
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    print("wrote", work)


if __name__ == "__main__":
    main()
