// The client against a real `memctl serve` (ENGRAM_URL), as clients/python/tests does.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BadRequestError,
  Client,
  ConnectionError,
  EngramError,
  JobFailedError,
  NotFoundError,
  UnauthorizedError,
  isConversation,
  isMemory,
  isTask,
  type Job,
} from "../src/index.js";
import { server, session, URL } from "./env.js";

const c = new Client(URL);

test("health, openapi and metrics", server, async () => {
  assert.deepEqual(await c.health(), { status: "ok" });
  const doc = await c.openapi();
  assert.ok("/v1/memories/{id}/history" in doc.paths);
  assert.match(await c.metrics(), /# TYPE /);
});

test("remember, recall, get, list, update, history, revert, export, delete", server, async () => {
  const s = session();
  const r = await c.remember(s, "Alice drinks green tea every morning.", { tags: ["drinks"], metadata: { confidence: 0.9 } });
  assert.equal(r.ids.length, 1);
  assert.deepEqual(r.merged, [false]);
  const id = r.ids[0]!;
  await c.remember(s, "Alice's sister lives in Porto.", { tags: ["family"], source: "chat" });

  const got = await c.get(id);
  assert.equal(got.text, "Alice drinks green tea every morning.");
  assert.deepEqual(got.metadata, { confidence: 0.9 });
  assert.equal(got.last_access, null);
  assert.equal((await c.get(id, { vector: true })).vector?.length ? true : false, true);

  let rec = await c.recall("green tea", s);
  assert.equal(rec.results[0]!.id, id);
  const final = rec.results[0]!.score.final;
  assert.ok(final > 0 && final <= 1, `final ${final}`);
  rec = await c.recall("Alice", s, { filter: { tags: "family" } });
  assert.deepEqual(rec.results.map((m) => m.tags), [["family"]]);
  assert.equal((await c.recall("tea", session())).session_empty, true);
  rec = await c.recall({ turns: [{ role: "user", text: "where does the sister live?" }], session: s, k: 1, prompt_tokens: 200 });
  assert.equal(rec.results[0]!.text, "Alice's sister lives in Porto.");
  assert.match(rec.prompt ?? "", /Porto/);
  const strict = await c.recall("green tea", s, { min_score: 0.99 });
  assert.ok(strict.results.every((m) => m.score.final >= 0.99));
  rec = await c.recall({ query: "Porto", all_sessions: true, k: 50 });
  assert.ok(rec.results.some((m) => m.session === s));
  await assert.rejects(() => c.recall({ query: "x" }), TypeError);

  const page = await c.list({ session: s, limit: 1 });
  assert.equal(page.memories.length, 1);
  assert.ok(page.next_cursor);
  const all = [];
  for await (const m of c.memories({ session: s, limit: 1 })) all.push(m.id);
  assert.equal(all.length, 2);
  assert.equal((await c.list({ session: s, tag: ["drinks"] })).memories.length, 1);
  assert.equal((await c.list({ session: s, where: { "metadata.confidence": { range: { gte: 0.5 } } } })).memories.length, 1);
  assert.equal((await c.list({ session: s, source: "chat" })).memories.length, 1);

  const up = await c.update(id, { text: "Alice drinks oolong tea every morning." });
  assert.ok(isMemory(up));
  assert.equal(up.text, "Alice drinks oolong tea every morning.");
  assert.equal((await c.recall("oolong", s, { mode: "keyword" })).results[0]!.id, id);
  const hist = await c.history(id);
  assert.deepEqual(
    hist.map((v) => [v.version, v.change, v.memory?.text]),
    [[1, "update", "Alice drinks green tea every morning."]],
  );
  const back = await c.revert(id, 1);
  assert.ok(isMemory(back));
  assert.equal(back.text, "Alice drinks green tea every morning.");

  const dry = await c.cleanup({ dry_run: true, include_recalled: true, filter: { session: s } });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.count, 0);

  const lines = await c.export({ filter: { session: s } });
  assert.equal(lines[0]!["format"], "engram-export");
  assert.equal(lines.length, 3);

  assert.deepEqual(await c.delete(id), { deleted: id });
  const e = await c.get(id).catch((x: unknown) => x);
  assert.ok(e instanceof NotFoundError, String(e));
  assert.equal(e.status, 404);
  assert.match(e.message, new RegExp(id));
  await assert.rejects(() => c.delete(id), NotFoundError);
});

test("a near-duplicate that contradicts supersedes, and keeps the old fact in its history", server, async () => {
  const s = session();
  const a = await c.remember(s, "Erin is not allergic to peanuts.");
  const b = await c.remember(s, "Erin is allergic to peanuts.");
  assert.deepEqual(b.ids, a.ids);
  assert.deepEqual(b.superseded, [true]);
  const hist = await c.history(a.ids[0]!);
  assert.equal(hist[0]!.change, "supersede");
  assert.equal(hist[0]!.memory?.text, "Erin is not allergic to peanuts.");
});

test("forget, the trash, restore and purge; errors carry the server's message and status", server, async () => {
  const s = session();
  const id = (await c.remember(s, "a memory to forget about kites")).ids[0]!;
  const e = await c.forget([id, "ghost"]).catch((x: unknown) => x);
  assert.ok(e instanceof NotFoundError);
  assert.match(e.message, /ghost/);
  assert.equal(e.method, "POST");
  assert.equal(e.path, "/v1/forget");
  assert.equal(e.body?.error, e.message);
  assert.equal((await c.get(id)).id, id);

  const f = await c.forget([id]);
  assert.equal(f.forgotten, 1);
  assert.equal(f.restorable, true);
  assert.ok(f.purge_after);
  const trash = await c.forgotten(s);
  assert.deepEqual(trash.map((m) => m.id), [id]);
  assert.ok(trash[0]!.forgotten);
  assert.deepEqual(await c.restore([id]), { restored: 1 });
  assert.equal((await c.get(id)).text, "a memory to forget about kites");
  await assert.rejects(() => c.restore(["ghost"]), NotFoundError);

  assert.equal((await c.forget({ session: s, filter: { source: { exists: false } }, purge: true })).forgotten, 1);
  assert.deepEqual(await c.forgotten(s), []);

  const bad = await c.recall("x", s, { filter: { colour: "red" } }).catch((x: unknown) => x);
  assert.ok(bad instanceof BadRequestError);
  assert.equal(bad.status, 400);
  assert.match(bad.message, /unknown field/);
  await assert.rejects(() => c.remember(s, "   "), BadRequestError);
  await assert.rejects(() => c.recall("x", s, { k: 5000 }), BadRequestError);
});

test("short-term memory and tasks", server, async () => {
  const s = session();
  const ctx = await c.addTurn(s, "user", "I land in Osaka on Friday.");
  assert.ok(isConversation(ctx));
  assert.equal(ctx.turns.at(-1)!.text, "I land in Osaka on Friday.");
  await c.addTurn(s, "assistant", "Noted: Osaka, Friday.", { time: new Date().toISOString() });
  const conv = await c.context(s);
  assert.deepEqual(conv.turns.map((t) => t.role), ["user", "assistant"]);
  assert.equal(conv.session, s);
  // The user's turn becomes a memory when distilled, once.
  const d = await c.distill(s);
  assert.deepEqual([d.turns, d.events.map((e) => [e.event, e.memory])], [2, [["add", "I land in Osaka on Friday."]]]);
  assert.deepEqual((await c.distill(s)).events, []);
  assert.deepEqual(await c.clearContext(s), { cleared: true });
  assert.deepEqual((await c.context(s)).turns, []);
  // A conversation remembered at once: verbatim, or inferred; scoped as mem0 does.
  const verbatim = await c.rememberMessages(s, [{ role: "user", text: "ok thanks" }, { role: "assistant", text: "You're welcome!" }]);
  assert.equal(verbatim.events.length, 2);
  const inferred = await c.rememberMessages("", [{ role: "user", text: "ok thanks. I'm a night nurse now." }], { infer: true, user_id: s, run_id: "r1" });
  assert.deepEqual(inferred.events.map((e) => e.memory), ["I'm a night nurse now."]);
  assert.equal((await c.get(inferred.events[0]!.id)).metadata?.run_id, "r1");
  assert.deepEqual((await c.recall({ query: "nurse", user_id: s, run_id: "r2" })).results, []);

  const started = await c.startTask("plan the trip", { id: "trip", session: s });
  assert.equal(started.status, "active");
  const t = await c.updateStep("trip", "book", "done", { result: { seat: "12A" }, next: "pack", session: s });
  assert.ok(isTask(t));
  assert.equal(t.next, "pack");
  assert.deepEqual(t.steps?.[0]?.result, { seat: "12A" });
  // Task IDs are per session: another session's "trip" is another task.
  const s2 = session();
  await c.startTask("another trip", { id: "trip", session: s2 });
  const ambiguous = await c.task("trip").catch((x: unknown) => x);
  assert.ok(ambiguous instanceof BadRequestError, String(ambiguous));
  assert.equal((await c.task("trip", { session: s })).goal, "plan the trip");
  assert.equal((await c.task("trip", { session: s2 })).goal, "another trip");
  assert.equal((await c.finishTask("trip", "done", { session: s })).status, "done");
  assert.ok((await c.tasks()).some((x) => x.id === "trip" && x.session === s));
  assert.deepEqual(await c.deleteTask("trip", { session: s }), { deleted: true });
  await assert.rejects(() => c.task("trip", { session: s }), NotFoundError);
  assert.equal((await c.task("trip")).session, s2);
  await c.deleteTask("trip", { session: s2 });
});

test("administration: stats, sessions, jobs with progress, export and import, archive, backup stream", server, async () => {
  const s = session("admin");
  await c.remember(s, "The office wifi password rotates every Monday.", { time: "2024-01-02T03:04:05Z" });
  const stats = await c.stats();
  assert.ok(stats.memories >= 1);
  assert.ok((await c.adminStats()).memories >= 1);
  assert.ok((await c.sessions()).some((x) => x.name === s && x.memories === 1));
  assert.equal((await c.flush()).flushed, true);

  const seen: Job[] = [];
  const job = await c.check({ onProgress: (j) => seen.push(j), pollMs: 20 });
  assert.equal(job.state, "done");
  assert.equal(job.kind, "check");
  assert.ok(seen.length >= 1 && seen.at(-1)!.state === "done");
  assert.equal((await c.job(job.id!)).state, "done");
  assert.ok((await c.jobs()).some((j) => j.id === job.id));
  assert.equal((await c.compact()).state, "done");
  const started = await c.check({ wait: false });
  assert.equal(typeof started.id, "string");
  await c.waitJob(started.id!);

  const dry = await c.adminCleanup({ dry_run: true, older_than: "30d", session: s });
  assert.equal(dry.state, "done");
  const archived = await c.adminCleanup({ older_than: "30d", session: s });
  assert.equal((archived.result as { memories: unknown[] }).memories.length, 1);
  assert.ok((await c.archive()).some((m) => m.session === s));
  assert.equal((await c.restoreArchive({ all: true })).state, "done");
  assert.equal((await c.list({ session: s })).memories.length, 1);

  const file = await c.adminExport({ session: s });
  assert.match(file.split("\n")[0]!, /engram-export/);
  const imported = await c.import(file);
  assert.equal(imported.state, "done");

  const refused = await c.reembed("nonsense:model").catch((x: unknown) => x);
  assert.ok(refused instanceof BadRequestError, String(refused));
  assert.match(refused.message, /nonsense:model/);

  const tar = await c.backupTar();
  const reader = tar.getReader();
  const first = await reader.read();
  assert.ok(first.value && first.value.length > 0);
  await reader.cancel();

  const series = await c.series();
  assert.equal(typeof series.interval_seconds, "number");
  assert.ok(Array.isArray(series.points));
  assert.deepEqual(await c.purgeForgotten().then((r) => typeof r.purged), "number");
});

test("a server that cannot be reached, a timeout and a refused key are typed errors", async () => {
  const e = await new Client("http://127.0.0.1:9", { timeoutMs: 2000 }).health().catch((x: unknown) => x);
  assert.ok(e instanceof ConnectionError, String(e));
  assert.equal(e.status, 0);

  const hang: typeof fetch = (_input, init) =>
    new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason)));
  const slow = await new Client({ fetch: hang, timeoutMs: 50 }).health().catch((x: unknown) => x);
  assert.ok(slow instanceof ConnectionError, String(slow));
  assert.match(slow.message, /within 50 ms/);

  const ctrl = new AbortController();
  const aborted = new Client({ fetch: hang }).request("GET /healthz", { signal: ctrl.signal }).catch((x: unknown) => x);
  ctrl.abort(new Error("stop"));
  assert.equal(((await aborted) as Error).message, "stop");

  let sent: Request | undefined;
  const refuse: typeof fetch = async (input, init) => {
    sent = new Request(input, init);
    return new Response(JSON.stringify({ error: "missing or wrong bearer key" }), { status: 401, headers: { "Content-Type": "application/json" } });
  };
  const u = await new Client({ fetch: refuse, token: "k1", url: "http://h:1/" }).stats().catch((x: unknown) => x);
  assert.ok(u instanceof UnauthorizedError);
  assert.equal(u.status, 401);
  assert.equal(u.message, "missing or wrong bearer key");
  assert.equal(sent?.headers.get("Authorization"), "Bearer k1");
  assert.equal(sent?.url, "http://h:1/v1/stats");
});

// jobServer answers a job's start and polls from a script of states, as the server would.
function jobServer(states: Job[], cancels: string[] = []): typeof fetch {
  let i = 0;
  return async (input, init) => {
    const url = new globalThis.URL(String(input));
    const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
    if (url.pathname.endsWith("/cancel")) {
      cancels.push(url.pathname);
      return json({ ...states[i], cancel_requested: true }, 202);
    }
    if (init?.method === "POST") return json(states[0], 202);
    i = Math.min(i + 1, states.length - 1);
    return json(states[i]);
  };
}

test("admin jobs: progress, failure and cancellation", async () => {
  const run = (done: number, state: Job["state"] = "running", error?: string): Job => ({ id: "j1", kind: "compact", state, done, total: 3, unit: "records", started: "2026-12-03T10:00:00Z", ...(error ? { error } : {}) });
  const seen: number[] = [];
  const ok = await new Client({ fetch: jobServer([run(0), run(1), run(2), run(3, "done")]) }).compact({ pollMs: 1, onProgress: (j) => seen.push(j.done!) });
  assert.equal(ok.state, "done");
  assert.deepEqual(seen, [0, 1, 2, 3]);

  const failed = await new Client({ fetch: jobServer([run(0), run(1, "failed", "segment 3: checksum mismatch")]) })
    .check({ pollMs: 1 })
    .catch((x: unknown) => x);
  assert.ok(failed instanceof JobFailedError && failed instanceof EngramError, String(failed));
  assert.equal(failed.message, "segment 3: checksum mismatch");
  assert.equal(failed.job.state, "failed");

  const cancels: string[] = [];
  const ctrl = new AbortController();
  const pending = new Client({ fetch: jobServer([run(0), run(1), run(1), run(1)], cancels) })
    .compact({ pollMs: 5, signal: ctrl.signal, onProgress: (j) => j.done === 1 && ctrl.abort(new Error("user cancelled")) })
    .catch((x: unknown) => x);
  assert.equal(((await pending) as Error).message, "user cancelled");
  assert.deepEqual(cancels, ["/v1/jobs/j1/cancel"]);
});
