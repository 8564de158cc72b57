// HF's results for onnx/tokenizer's edge-case test (edge_test.go):
//   go test -run TestEdgeCases ./onnx/tokenizer/ -args -edge.dump DIR   (writes DIR/*.json)
//   NODE_PATH=<dir>/node_modules node scripts/tokenizer/edge.js DIR testdata/tokenizer/edge/hf.json
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('@anush008/tokenizers');

async function main() {
  const [dir, out] = process.argv.slice(2);
  const strings = JSON.parse(fs.readFileSync(path.join(dir, 'strings.json'), 'utf8'));
  const res = {};
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'strings.json').sort()) {
    const tok = Tokenizer.fromFile(path.join(dir, f));
    const rows = [];
    for (const s of strings) {
      const e = await tok.encode(s);
      rows.push([e.getIds(), e.getTypeIds(), e.getAttentionMask()]);
    }
    res[f.replace(/\.json$/, '')] = rows;
  }
  fs.mkdirSync(path.dirname(out), { recursive: true, mode: 0o700 });
  fs.writeFileSync(out, JSON.stringify(res) + '\n', { mode: 0o600 });
}
main().catch((e) => { console.error(e); process.exit(1); });
