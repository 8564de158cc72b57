// The mem0-style facade against a real `memctl serve`, as clients/python/tests does.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Memory } from "../src/index.js";
import { server, session, URL } from "./env.js";

test("mem0 flow: add, search, getAll, get, update, history, delete, deleteAll", server, async () => {
  const m = new Memory({ url: URL });
  const userId = session("mem0");
  const r = await m.add(
    [
      { role: "system", content: "be nice" },
      { role: "user", content: "I am vegetarian and I love hiking in the Alps." },
    ],
    { userId, metadata: { category: "food" } },
  );
  assert.deepEqual(r.results.map((x) => x.event), ["ADD"]);
  const id = r.results[0]!.id;
  await m.add("My favourite city is Lisbon.", { userId });

  const found = (await m.search("hiking", { userId, limit: 3 })).results;
  assert.equal(found[0]!.id, id);
  assert.equal(found[0]!.memory, "I am vegetarian and I love hiking in the Alps.");
  assert.equal(found[0]!.userId, userId);
  assert.ok(found[0]!.score! > 0 && found[0]!.score! <= 1);
  assert.equal(found[0]!.scoreParts!.final, found[0]!.score);
  const only = (await m.search("hiking Lisbon", { userId, filters: { category: "food" } })).results;
  assert.deepEqual(only.map((x) => x.id), [id]);
  assert.deepEqual((await m.search("hiking", { userId, threshold: 1 })).results, []);

  assert.equal((await m.getAll({ userId })).results.length, 2);
  assert.equal((await m.getAll({ userId, limit: 1 })).results.length, 1);
  assert.deepEqual((await m.get(id))!.metadata, { category: "food" });
  assert.equal(await m.get("nope"), null);

  assert.deepEqual(await m.update(id, "I am vegan and I love hiking in the Alps."), { message: "Memory updated successfully!" });
  const hist = await m.history(id);
  assert.deepEqual(hist.map((h) => h.event), ["ADD", "UPDATE"]);
  assert.equal(hist[1]!.oldMemory, "I am vegetarian and I love hiking in the Alps.");
  assert.equal(hist[1]!.newMemory, "I am vegan and I love hiking in the Alps.");

  await m.delete(id);
  assert.equal(await m.get(id), null);
  assert.match((await m.deleteAll({ userId })).message, /^1 memories deleted/);
  assert.deepEqual((await m.getAll({ userId })).results, []);
  await assert.rejects(() => m.add("no owner", {}), TypeError);
});

test("mem0 scopes: userId, agentId and runId select exactly their memories; add infers; reset is restorable", server, async () => {
  const m = new Memory({ url: URL });
  const userId = session("scope");
  const text = "I am flying to Lisbon on Friday.";
  const trip = (await m.add(text, { userId, runId: "trip-42", infer: false })).results[0]!;
  const other = (await m.add(text, { userId, runId: "other-run", infer: false })).results[0]!;
  assert.equal(trip.event, "ADD");
  assert.equal(other.event, "ADD"); // the same text in another run does not merge
  // The quoted bug: search({userId, runId: "other-run"}) found what trip-42 holds.
  assert.deepEqual((await m.search("Lisbon", { userId, runId: "other-run" })).results.map((x) => x.id), [other.id]);
  assert.deepEqual((await m.search("Lisbon", { userId, runId: "nowhere" })).results, []);
  assert.equal((await m.search("Lisbon", { userId })).results.length, 2);
  const found = (await m.getAll({ userId, runId: "trip-42" })).results;
  assert.deepEqual(found.map((x) => [x.id, x.userId, x.runId]), [[trip.id, userId, "trip-42"]]);
  assert.deepEqual(found[0]!.metadata, {});

  const inferred = await m.add(
    [
      { role: "user", content: "haha ok. My sister Jenna moved to Denver last week.", time: "2024-07-01T09:00:00Z" },
      { role: "assistant", content: "Nice! I'll remember that." },
    ],
    { userId, importance: 0.9 },
  );
  assert.deepEqual(inferred.results.map((x) => [x.event, x.memory]), [["ADD", "My sister Jenna moved to Denver last week."]]);
  const got = await m.client.get(inferred.results[0]!.id);
  assert.equal(got.importance, 0.9);
  assert.equal(got.created, "2024-07-01T09:00:00Z");

  const r = await m.reset({ userId, runId: "trip-42" });
  assert.equal(r.forgotten, 1);
  assert.equal(r.restorable, true);
  assert.equal((await m.getAll({ userId })).results.length, 2);
  assert.equal((await m.client.restore([trip.id])).restored, 1);
  assert.match((await m.deleteAll({ userId, runId: "other-run" })).message, /^1 memories deleted/);
  assert.equal((await m.getAll({ userId })).results.length, 2);
});
