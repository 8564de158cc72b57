// The README's lines that give an agent memory, as written there (../../README.md, "Clients"),
// compiled and run against the server: a LangChain.js chain with a fake model, and
// generateText with a scripted mock model.
import assert from "node:assert/strict";
import { test } from "node:test";
import { awaitAllCallbacks } from "@langchain/core/callbacks/promises";
import { ChatPromptTemplate, MessagesPlaceholder } from "@langchain/core/prompts";
import { RunnableWithMessageHistory } from "@langchain/core/runnables";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { generateText, stepCountIs, type ModelMessage } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Client } from "../src/index.js";
import { EngramChatMessageHistory, EngramRetriever } from "../src/langchain.js";
import { engramTools, memoryPrompt } from "../src/ai.js";
import { server, URL } from "./env.js";

// The README's snippets talk to the default address; here the client's options carry the test server's.
const at = { url: URL };

test("README: LangChain.js", server, async () => {
  const chain = ChatPromptTemplate.fromMessages([new MessagesPlaceholder("history"), ["human", "{input}"]]).pipe(new FakeListChatModel({ responses: ["ok"] }));
  const s = "readme-alice-" + Date.now();
  await new Client(URL).remember(s, "Alice is allergic to peanuts.");

  const retriever = new EngramRetriever({ ...at, session: s, k: 5, minScore: 0.3 });
  const chat = new RunnableWithMessageHistory({ runnable: chain, inputMessagesKey: "input", historyMessagesKey: "history",
    getMessageHistory: (id) => new EngramChatMessageHistory({ ...at, session: id, remember: true }) });

  assert.equal((await retriever.invoke("what is Alice allergic to?"))[0]!.pageContent, "Alice is allergic to peanuts.");
  await chat.invoke({ input: "I moved to Lisbon." }, { configurable: { sessionId: s } });
  await awaitAllCallbacks();
  assert.equal((await new Client(URL).context(s)).turns.length, 2);
});

test("README: Vercel AI SDK", server, async () => {
  const s = "readme-alice-" + Date.now();
  await new Client(URL).remember(s, "Alice's favourite colour is teal.");
  const model = new MockLanguageModelV3({
    doGenerate: {
      content: [{ type: "text", text: "Teal." }],
      finishReason: { unified: "stop", raw: "stop" },
      usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
      warnings: [],
    },
  });
  const messages: ModelMessage[] = [{ role: "user", content: "What is my favourite colour?" }];

  const { text } = await generateText({ model, messages, tools: engramTools({ ...at, session: s }), stopWhen: stepCountIs(5),
    system: "You are a helpful assistant.\n\n" + (await memoryPrompt({ ...at, session: s, messages })) });

  assert.equal(text, "Teal.");
  assert.match(JSON.stringify(model.doGenerateCalls[0]!.prompt), /favourite colour is teal/);
});
