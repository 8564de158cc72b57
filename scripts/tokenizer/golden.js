// Writes golden token ids with HuggingFace tokenizers (the Rust library, as
// the npm package @anush008/tokenizers).
//
//   NODE_PATH=<dir>/node_modules node scripts/tokenizer/golden.js WORKDIR OUTDIR
//
// For each WORKDIR/<variant>.raw.json (from build.py) it loads the file with
// HF, saves HF's own serialization as OUTDIR/<variant>/tokenizer.json(.gz),
// and encodes the strings of WORKDIR/strings.jsonl (copied to
// OUTDIR/strings.jsonl.gz) into OUTDIR/<variant>/golden.jsonl.gz: one line per
// string, {"i", "ids", "t64"?, "t8192"?} where i is the line of the string,
// "ids" is without truncation and tN (present only when it differs from "ids")
// is with truncation to N tokens. Batch padding goldens (xlmr only) go to
// OUTDIR/xlmr/padding.jsonl.gz.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('@anush008/tokenizers');

const [work, out] = process.argv.slice(2);
if (!work || !out) {
  console.error('usage: golden.js WORKDIR OUTDIR');
  process.exit(2);
}

// variant -> [string stride (1 = all strings), gzip the tokenizer.json]
const variants = {
  xlmr: [1, true], tiny: [3, false], legacy: [4, true], first: [4, true], never: [4, true], bytefb: [4, true],
};

function same(a, b) {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

async function ids(tok, texts) {
  const res = [];
  for (const t of texts) res.push((await tok.encode(t)).getIds());
  return res;
}

async function main() {
  const raw = fs.readFileSync(path.join(work, 'strings.jsonl'));
  fs.writeFileSync(path.join(out, 'strings.jsonl.gz'), zlib.gzipSync(raw, { level: 9 }), { mode: 0o600 });
  const strings = raw.toString('utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  for (const [name, [stride, gz]] of Object.entries(variants)) {
    const dir = path.join(out, name);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const saved = path.join(work, name + '.json');
    Tokenizer.fromFile(path.join(work, name + '.raw.json')).save(saved, false);
    const data = fs.readFileSync(saved);
    if (gz) fs.writeFileSync(path.join(dir, 'tokenizer.json.gz'), zlib.gzipSync(data, { level: 9 }), { mode: 0o600 });
    else fs.writeFileSync(path.join(dir, 'tokenizer.json'), data, { mode: 0o600 });

    const tok = Tokenizer.fromFile(saved);
    const index = strings.map((_, i) => i).filter((i) => i % stride === 0);
    const texts = index.map((i) => strings[i]);
    const full = await ids(tok, texts);
    const trunc = {};
    for (const n of [64, 8192]) {
      tok.setTruncation(n);
      trunc[n] = await ids(tok, texts);
    }
    tok.disableTruncation();
    const lines = texts.map((_, i) => {
      const o = { i: index[i], ids: full[i] };
      for (const n of [64, 8192]) if (!same(trunc[n][i], full[i])) o['t' + n] = trunc[n][i];
      return JSON.stringify(o);
    });
    fs.writeFileSync(path.join(dir, 'golden.jsonl.gz'), zlib.gzipSync(lines.join('\n') + '\n', { level: 9 }), { mode: 0o600 });

    // Batch padding: groups of 7 strings under several padding settings.
    const pads = [
      { name: 'longest', opts: {} },
      { name: 'longest-mult8-left', opts: { padToMultipleOf: 8, direction: 'left' } },
      { name: 'fixed40', opts: { maxLength: 40 } },
    ];
    const plines = [];
    for (const p of name === 'xlmr' ? pads : []) {
      tok.setPadding({ padId: tok.tokenToId('<pad>'), padToken: '<pad>', ...p.opts });
      for (let i = 0; i + 7 <= 280; i += 7) {
        const batch = index.slice(i, i + 7);
        const encs = await tok.encodeBatch(batch.map((k) => strings[k]));
        plines.push(JSON.stringify({ padding: p.name, batch, ids: encs.map((e) => e.getIds()), mask: encs.map((e) => e.getAttentionMask()), types: encs.map((e) => e.getTypeIds()) }));
      }
    }
    tok.disablePadding();
    if (plines.length > 0) fs.writeFileSync(path.join(dir, 'padding.jsonl.gz'), zlib.gzipSync(plines.join('\n') + '\n', { level: 9 }), { mode: 0o600 });
    console.log(name, texts.length, 'strings, vocab', tok.getVocabSize(true));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
