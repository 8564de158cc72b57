// Deno runs the built client with its declarations (each .js names its .d.ts with
// @ts-self-types): `deno run --check` type-checks this file against them, then runs it
// against ENGRAM_URL. typescript_test.go runs it when deno is on PATH (or ENGRAM_DENO).
import { Client, Memory, NotFoundError, type Recalled } from "../../dist/src/index.js";

const c = new Client(Deno.env.get("ENGRAM_URL"));
const s = "deno-" + crypto.randomUUID().slice(0, 8);
const r = await c.remember(s, "Deno keeps the green tea on the top shelf.");
const rec = await c.recall("green tea", s);
const top: Recalled | undefined = rec.results[0];
const final: number = top!.score.final;
if (top?.id !== r.ids[0] || !(final > 0 && final <= 1)) throw new Error(`recall: ${JSON.stringify(rec)}`);
try {
  await c.get("ghost");
  throw new Error("get ghost: no error");
} catch (e) {
  if (!(e instanceof NotFoundError) || e.status !== 404) throw e;
}
const found = await new Memory({ client: c }).search("shelf", { userId: s });
if (found.results[0]?.memory !== "Deno keeps the green tea on the top shelf.") throw new Error(`search: ${JSON.stringify(found)}`);
console.log("deno smoke: ok");
