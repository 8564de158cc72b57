// The Vercel AI SDK adapters through the SDK's own interfaces (tool.execute, and
// generateText driving the tools from a scripted MockLanguageModelV3, which validates the
// zod input schemas) against a real `memctl serve`; no language model.
import assert from "node:assert/strict";
import { test } from "node:test";
import { asSchema, generateText, stepCountIs, type ModelMessage, type ToolExecutionOptions } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Client } from "../src/index.js";
import { engramTools, memoryPrompt, recallTool, rememberTool } from "../src/ai.js";
import { server, session, URL } from "./env.js";

const client = new Client(URL);
const call = (messages: ModelMessage[] = []): ToolExecutionOptions => ({ toolCallId: "call-1", messages });

test("remember and recall tools: execute, with the zod schemas the model sees", server, async () => {
  const s = session("ai");
  const tools = engramTools({ client, session: s });
  const out = await tools.remember.execute!({ text: "Alice is allergic to peanuts.", tags: ["health"], importance: 0.9 }, call([{ role: "user", content: "Note that I cannot eat peanuts." }]));
  assert.equal((out as { ids: string[] }).ids.length, 1);
  assert.equal((out as { updated: boolean }).updated, false);
  const id = (out as { ids: string[] }).ids[0]!;
  const m = await client.get(id);
  assert.deepEqual(m.tags, ["health"]);
  assert.equal(m.importance, 0.9);
  assert.equal(m.source, "assistant");
  await tools.remember.execute!({ text: "Alice takes the 8:15 train to work." }, call());

  const found = (await tools.recall.execute!({ query: "what can Alice not eat?" }, call())) as { memories: { id: string; text: string; score: number; date: string; tags?: string[] }[] };
  assert.equal(found.memories[0]!.id, id);
  assert.equal(found.memories[0]!.text, "Alice is allergic to peanuts.");
  assert.ok(found.memories[0]!.score > 0 && found.memories[0]!.score <= 1);
  assert.deepEqual(found.memories[0]!.tags, ["health"]);
  const one = (await tools.recall.execute!({ query: "Alice", k: 1 }, call())) as { memories: unknown[] };
  assert.equal(one.memories.length, 1);
  const strict = (await recallTool({ url: URL, session: s, minScore: 0.99 }).execute!({ query: "train" }, call())) as { memories: { score: number }[] };
  assert.ok(strict.memories.every((x) => x.score >= 0.99));
  const empty = (await recallTool({ client, session: session("ai-empty") }).execute!({ query: "peanuts" }, call())) as { memories: unknown[] };
  assert.deepEqual(empty.memories, []);

  // The schemas refuse what the server would refuse.
  const remember = asSchema(rememberTool({ client, session: s }).inputSchema);
  assert.equal((await remember.validate!({ text: "" })).success, false);
  assert.equal((await remember.validate!({ text: "x", importance: 2 })).success, false);
  assert.equal((await remember.validate!({ text: "x", importance: 0.5 })).success, true);
  const recall = asSchema(tools.recall.inputSchema);
  assert.equal((await recall.validate!({ query: "x", k: 0 })).success, false);
  const json = (await remember.jsonSchema) as { properties: Record<string, unknown>; required: string[] };
  assert.deepEqual(Object.keys(json.properties).sort(), ["importance", "tags", "text"]);
  assert.deepEqual(json.required, ["text"]);
});

test("generateText runs the tools the model calls, with the memory block in system", server, async () => {
  const s = session("ai-gen");
  await client.remember(s, "Alice's favourite colour is teal.");
  let step = 0;
  const prompts: unknown[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (opts) => {
      prompts.push(opts.prompt);
      const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
      step++;
      if (step === 1) {
        return {
          content: [
            { type: "tool-call", toolCallId: "c1", toolName: "remember", input: JSON.stringify({ text: "Alice's dog is called Biscuit.", tags: ["pets"] }) },
            { type: "tool-call", toolCallId: "c2", toolName: "recall", input: JSON.stringify({ query: "favourite colour" }) },
          ],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: "text", text: "Teal, and your dog is Biscuit." }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
  const messages: ModelMessage[] = [{ role: "user", content: "What is my favourite colour?" }];
  const system = await memoryPrompt({ client, session: s, messages });
  assert.match(system, /teal/);
  const result = await generateText({ model, system: `You are helpful.\n\n${system}`, messages, tools: engramTools({ client, session: s }), stopWhen: stepCountIs(3) });
  assert.equal(result.text, "Teal, and your dog is Biscuit.");
  const results = result.steps[0]!.toolResults;
  assert.deepEqual(results.map((r) => r.toolName).sort(), ["recall", "remember"]);
  const recalled = results.find((r) => r.toolName === "recall")!.output as { memories: { text: string }[] };
  assert.equal(recalled.memories[0]!.text, "Alice's favourite colour is teal.");
  assert.match(JSON.stringify(prompts[0]), /favourite colour is teal/, "the memory block did not reach the model's system prompt");
  const pets = await client.list({ session: s, tag: ["pets"] });
  assert.deepEqual(pets.memories.map((m) => m.text), ["Alice's dog is called Biscuit."]);
  // The user's last message went along as the memory's context.
  assert.equal((await client.recall("favourite", s, { mode: "keyword", filter: { tags: "pets" } })).results.length, 1);
});

test("memoryPrompt recalls for the latest turns and answers the block for system", server, async () => {
  const s = session("ai-prompt");
  await client.remember(s, "Bob is training for the Berlin marathon in September.");
  await client.remember(s, "Bob's daughter plays the cello.");
  const messages: ModelMessage[] = [
    { role: "system", content: "ignored" },
    { role: "user", content: "Any tips for my race?" },
    { role: "assistant", content: [{ type: "text", text: "Which race is it?" }] },
    { role: "user", content: [{ type: "text", text: "The marathon in Berlin." }] },
  ];
  const block = await memoryPrompt({ url: URL, session: s, messages, maxTokens: 300 });
  assert.match(block, /Berlin marathon in September/);
  assert.match(block, /^<memories>\n[\s\S]*<\/memories>\n$/);
  const first = block.indexOf("marathon"), cello = block.indexOf("cello");
  assert.ok(cello === -1 || first < cello, "the marathon should rank first");
  // UIMessage form (parts) works as well.
  const ui = await memoryPrompt({ client, session: s, messages: [{ role: "user", parts: [{ type: "text", text: "cello lessons" }] }], k: 1 });
  assert.match(ui, /cello/);
  assert.doesNotMatch(ui, /marathon/);
  assert.equal(await memoryPrompt({ client, session: s, messages: [] }), "");
  assert.equal(await memoryPrompt({ client, session: session("ai-none"), messages }), "");
});
