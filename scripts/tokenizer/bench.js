// HF tokenizers (npm @anush008/tokenizers) speed on the golden strings:
//   NODE_PATH=<dir>/node_modules node scripts/tokenizer/bench.js testdata/tokenizer/xlmr ROUNDS
// (scripts/tokenizer/bench.sh runs it next to the Go benchmark).
// Prints tokens/s for sequential encode() calls (one string at a time, as the
// Go benchmark does) and for one encodeBatch call per round; run it with
// RAYON_NUM_THREADS=1 so HF uses one thread.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const os = require('os');
const { Tokenizer } = require('@anush008/tokenizers');

async function main() {
  const [dir, roundsArg] = process.argv.slice(2);
  const rounds = Number(roundsArg || 3);
  const strings = zlib.gunzipSync(fs.readFileSync(path.join(dir, '..', 'strings.jsonl.gz'))).toString('utf8')
    .split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  let file = path.join(dir, 'tokenizer.json');
  if (!fs.existsSync(file)) {
    file = path.join(os.tmpdir(), 'bench-tokenizer-' + process.pid + '.json');
    fs.writeFileSync(file, zlib.gunzipSync(fs.readFileSync(path.join(dir, 'tokenizer.json.gz'))));
  }
  const tok = Tokenizer.fromFile(file);
  await tok.encode('warm up');
  for (const mode of ['encode', 'encodeBatch']) {
    let best = 0;
    for (let r = 0; r < rounds; r++) {
      let tokens = 0;
      const t0 = process.hrtime.bigint();
      if (mode === 'encode') {
        for (const s of strings) tokens += (await tok.encode(s)).getLength();
      } else {
        for (const e of await tok.encodeBatch(strings)) tokens += e.getLength();
      }
      const sec = Number(process.hrtime.bigint() - t0) / 1e9;
      best = Math.max(best, tokens / sec);
    }
    console.log(`hf ${path.basename(dir)} ${mode}: ${Math.round(best)} tokens/s (best of ${rounds})`);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
