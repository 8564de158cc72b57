// The LangChain.js adapters through LangChain's own interfaces (retriever.invoke, a chain
// with RunnableWithMessageHistory, history.addMessages/getMessages/clear) against a real
// `memctl serve`; the chat model is LangChain's FakeListChatModel (no language model).
import assert from "node:assert/strict";
import { test } from "node:test";
import { awaitAllCallbacks } from "@langchain/core/callbacks/promises";
import { Document } from "@langchain/core/documents";
import { AIMessage, ChatMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import type { ChatPromptValueInterface } from "@langchain/core/prompt_values";
import { ChatPromptTemplate, MessagesPlaceholder } from "@langchain/core/prompts";
import { BaseRetriever } from "@langchain/core/retrievers";
import { RunnableLambda, RunnableWithMessageHistory } from "@langchain/core/runnables";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import { Client } from "../src/index.js";
import { EngramChatMessageHistory, EngramRetriever } from "../src/langchain.js";
import { server, session, URL } from "./env.js";

const client = new Client(URL);

test("EngramRetriever: invoke recalls documents with session, filters, k and min score", server, async () => {
  const s = session("lc");
  const tea = (await client.remember(s, "Alice drinks green tea every morning.", { tags: ["drinks"], metadata: { confidence: 0.9 } })).ids[0]!;
  await client.remember(s, "Alice's sister Maria lives in Porto.", { tags: ["family"], source: "chat" });
  await client.remember(s, "Alice commutes by bicycle along the river.", { tags: ["travel"] });
  await client.remember(session("lc-other"), "Alice drinks black coffee at night.");

  const retriever = new EngramRetriever({ client, session: s });
  assert.ok(retriever instanceof BaseRetriever);
  const docs = await retriever.invoke("what does Alice drink?");
  assert.ok(docs.length >= 1 && docs.length <= 5);
  const top = docs[0]!;
  assert.ok(top instanceof Document);
  assert.equal(top.pageContent, "Alice drinks green tea every morning.");
  assert.equal(top.id, tea);
  assert.equal(top.metadata.id, tea);
  assert.equal(top.metadata.session, s);
  assert.equal(top.metadata["confidence"], 0.9);
  assert.deepEqual(top.metadata.tags, ["drinks"]);
  assert.ok(top.metadata.score > 0 && top.metadata.score <= 1);
  assert.equal(top.metadata.scores.final, top.metadata.score);
  assert.ok(docs.every((d) => d.metadata.session === s), "another session's memory came back");
  for (let i = 1; i < docs.length; i++) assert.ok(docs[i - 1]!.metadata.score >= docs[i]!.metadata.score);

  const one = await new EngramRetriever({ client, session: s, k: 1 }).invoke("Alice");
  assert.equal(one.length, 1);
  const family = await new EngramRetriever({ url: URL, session: s, filter: { tags: "family" } }).invoke("Alice");
  assert.deepEqual(family.map((d) => d.pageContent), ["Alice's sister Maria lives in Porto."]);
  const strict = await new EngramRetriever({ client, session: s, minScore: 0.99 }).invoke("what does Alice drink?");
  assert.ok(strict.every((d) => d.metadata.score >= 0.99));
  assert.ok(strict.length < docs.length);
  const everywhere = await new EngramRetriever({ client, allSessions: true, k: 50 }).invoke("Alice drinks");
  assert.ok(everywhere.some((d) => d.pageContent === "Alice drinks black coffee at night."));
  const keyword = await new EngramRetriever({ client, session: s, recall: { mode: "keyword" } }).invoke("bicycle");
  assert.equal(keyword[0]!.pageContent, "Alice commutes by bicycle along the river.");

  // batch and a chain: the retriever is a Runnable like any other.
  const [a, b] = await retriever.batch(["tea", "Porto"]);
  assert.equal(a![0]!.pageContent, "Alice drinks green tea every morning.");
  assert.equal(b![0]!.pageContent, "Alice's sister Maria lives in Porto.");
  const context = await retriever.pipe(RunnableLambda.from((ds: Document[]) => ds.map((d) => d.pageContent).join("\n"))).invoke("sister");
  assert.match(context, /Maria lives in Porto/);

  const added = await new EngramRetriever({ client, session: s }).addDocuments([new Document({ pageContent: "Alice is learning Portuguese.", metadata: { level: "A2", nested: { no: 1 } } })]);
  assert.equal(added.length, 1);
  assert.deepEqual((await client.get(added[0]!)).metadata, { level: "A2" });
  assert.throws(() => new EngramRetriever({ client }), TypeError);
});

test("EngramChatMessageHistory: addMessages, getMessages, summary past the budget, clear", server, async () => {
  const s = session("lc-chat");
  const history = new EngramChatMessageHistory({ client, session: s });
  assert.ok(history instanceof BaseListChatMessageHistory);
  await history.addMessages([
    new SystemMessage("You are a travel assistant."),
    new HumanMessage("I land in Osaka on Friday."),
    new AIMessage("Noted: Osaka, Friday."),
    new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "lookup", args: {} }] }),
    new ChatMessage({ content: "flight NH 123 is on time", role: "tool-log" }),
  ]);
  await history.addUserMessage("Book a hotel near Namba.");
  await history.addAIMessage("Booked: Hotel Namba, two nights.");
  let msgs = await history.getMessages();
  assert.deepEqual(
    msgs.map((m) => [m.getType(), m.content]),
    [
      ["system", "You are a travel assistant."],
      ["human", "I land in Osaka on Friday."],
      ["ai", "Noted: Osaka, Friday."],
      ["generic", "flight NH 123 is on time"],
      ["human", "Book a hotel near Namba."],
      ["ai", "Booked: Hotel Namba, two nights."],
    ],
  );
  assert.equal((msgs[3] as ChatMessage).role, "tool-log");
  assert.deepEqual((await client.context(s)).turns.map((t) => t.role), ["system", "user", "assistant", "tool-log", "user", "assistant"]);

  // Past the server's token budget the oldest turns fold into a summary, answered first.
  for (let i = 0; i < 12; i++) await history.addUserMessage(`Day ${i + 1}: visit temple number ${i + 1} in Kyoto with Kenji and note the entry fee of ${500 + i} yen.`);
  msgs = await history.getMessages();
  const conv = await client.context(s);
  assert.ok(conv.compressed > 0, "the server compressed nothing: is --short-term-tokens small?");
  assert.equal(msgs[0]!.getType(), "system");
  assert.match(String(msgs[0]!.content), /^Summary of the earlier conversation:\n/);
  assert.equal(msgs.length, conv.turns.length + 1);
  assert.equal(msgs.at(-1)!.content, "Day 12: visit temple number 12 in Kyoto with Kenji and note the entry fee of 511 yen.");

  await history.clear();
  assert.deepEqual(await history.getMessages(), []);
});

test("a chain gains memory by swapping its history for EngramChatMessageHistory", server, async () => {
  const s = session("lc-chain");
  const prompt = ChatPromptTemplate.fromMessages([["system", "You are helpful."], new MessagesPlaceholder("history"), ["human", "{input}"]]);
  const model = new FakeListChatModel({ responses: ["Nice to meet you, Priya.", "You are Priya."] });
  const seen: number[] = [];
  const chain = prompt.pipe(
    RunnableLambda.from(async (p: ChatPromptValueInterface) => {
      seen.push(p.toChatMessages().length);
      return p;
    }),
  ).pipe(model);
  const withHistory = new RunnableWithMessageHistory({
    runnable: chain,
    getMessageHistory: (sessionId: string) => new EngramChatMessageHistory({ client, session: sessionId, remember: true }),
    inputMessagesKey: "input",
    historyMessagesKey: "history",
  });
  const config = { configurable: { sessionId: s } };
  assert.equal((await withHistory.invoke({ input: "Hi, I am Priya and I am allergic to shellfish." }, config)).content, "Nice to meet you, Priya.");
  await awaitAllCallbacks();
  assert.equal((await withHistory.invoke({ input: "Who am I?" }, config)).content, "You are Priya.");
  await awaitAllCallbacks();
  // The second call saw the first exchange (system + 2 history + input).
  assert.deepEqual(seen, [2, 4]);
  const turns = (await client.context(s)).turns;
  assert.deepEqual(turns.map((t) => [t.role, t.text]), [
    ["user", "Hi, I am Priya and I am allergic to shellfish."],
    ["assistant", "Nice to meet you, Priya."],
    ["user", "Who am I?"],
    ["assistant", "You are Priya."],
  ]);
  // remember: true kept the user's messages in long-term memory, where the retriever finds them.
  const docs = await new EngramRetriever({ client, session: s }).invoke("shellfish allergy");
  assert.equal(docs[0]!.pageContent, "Hi, I am Priya and I am allergic to shellfish.");
  assert.equal(docs[0]!.metadata.source, "chat");
});
