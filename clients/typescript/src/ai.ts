// @ts-self-types="./ai.d.ts"
// Vercel AI SDK adapters: remember and recall as tool() definitions with zod schemas, and
// memoryPrompt, which recalls for the latest turns and answers the memory block for
// `system`. Pass the tools to generateText/streamText ({tools: engramTools({session})}).
import { tool } from "ai";
import { z } from "zod";
import { Client, type ClientOptions, type RecallOptions, type RecallTurn, type RememberOptions } from "./client.js";
import type { Filter } from "./openapi.js";

/** Where the tools find the server and whose memories they keep. */
export interface EngramToolsOptions extends ClientOptions {
  client?: Client;
  /** the session the tools remember into and recall from */
  session: string;
  /** how many memories recall answers by default (default 5) */
  k?: number;
  /** the least final score a recalled memory needs, in [0, 1] */
  minScore?: number;
  /** restricts recall (engram's filter language) */
  filter?: Filter;
  /** what remember stores besides the text (source defaults to "assistant") */
  remember?: RememberOptions;
  /** any other recall option */
  recall?: RecallOptions;
}

function clientOf(o: { client?: Client } & ClientOptions): Client {
  return o.client ?? new Client(o);
}

/** A message as the AI SDK passes them: ModelMessage (content) or UIMessage (parts). */
export interface ChatMessageLike {
  role: string;
  content?: unknown;
  parts?: unknown;
}

/** textOf is the text of a message: its string content, or its text parts joined. */
export function textOf(m: ChatMessageLike): string {
  if (typeof m.content === "string") return m.content;
  const parts = Array.isArray(m.content) ? m.content : Array.isArray(m.parts) ? m.parts : [];
  return parts
    .map((p: unknown) => {
      const q = p as { type?: string; text?: unknown };
      return q?.type === "text" && typeof q.text === "string" ? q.text : "";
    })
    .join("\n");
}

const rememberInput = z.object({
  text: z.string().min(1).describe("one self-contained statement to remember, e.g. 'Alice is allergic to peanuts.'"),
  tags: z.array(z.string()).optional().describe("labels to find it by later"),
  importance: z.number().min(0).max(1).optional().describe("0 to 1; how much it matters (default 0.5)"),
});

const recallInput = z.object({
  query: z.string().min(1).describe("what to look for, in plain words"),
  k: z.number().int().min(1).max(50).optional().describe("how many memories (default 5)"),
});

/** rememberTool stores a statement in long-term memory; the last user message goes along as its context. */
export function rememberTool(options: EngramToolsOptions) {
  const client = clientOf(options);
  return tool({
    description:
      "Remember a fact, preference or decision for later conversations. Store one self-contained statement per call.",
    inputSchema: rememberInput,
    execute: async ({ text, tags, importance }, { messages, abortSignal }) => {
      const lastUser = [...(messages ?? [])].reverse().find((m) => m.role === "user");
      const context = lastUser ? textOf(lastUser).slice(0, 2000) : "";
      const r = await client.request("POST /v1/remember", {
        body: {
          source: "assistant",
          ...options.remember,
          ...(tags ? { tags: [...(options.remember?.tags ?? []), ...tags] } : {}),
          ...(importance !== undefined ? { importance } : {}),
          ...(context && context !== text ? { context } : {}),
          session: options.session,
          text,
        },
        signal: abortSignal,
      });
      return { ids: r.ids ?? [], updated: (r.merged ?? []).some(Boolean) };
    },
  });
}

/** recallTool searches long-term memory and answers the memories, best first, with their scores. */
export function recallTool(options: EngramToolsOptions) {
  const client = clientOf(options);
  return tool({
    description: "Search long-term memory for what was remembered in earlier conversations.",
    inputSchema: recallInput,
    execute: async ({ query, k }, { abortSignal }) => {
      const r = await client.request("POST /v1/recall", {
        body: {
          ...options.recall,
          query,
          session: options.session,
          k: k ?? options.k ?? options.recall?.k,
          min_score: options.minScore ?? options.recall?.min_score,
          filter: options.filter ?? options.recall?.filter,
        },
        signal: abortSignal,
      });
      return {
        memories: (r.results ?? []).map((m) => ({
          id: m.id,
          text: m.text,
          score: m.score?.final ?? 0,
          date: m.updated,
          ...(m.source ? { source: m.source } : {}),
          ...(m.tags?.length ? { tags: m.tags } : {}),
        })),
      };
    },
  });
}

/** engramTools is {remember, recall}, for the `tools` of generateText or streamText. */
export function engramTools(options: EngramToolsOptions) {
  const o = { ...options, client: clientOf(options) };
  return { remember: rememberTool(o), recall: recallTool(o) };
}

/** What memoryPrompt recalls for. */
export interface MemoryPromptOptions extends ClientOptions {
  client?: Client;
  session: string;
  /** the conversation so far (ModelMessage or UIMessage), oldest first */
  messages: ChatMessageLike[];
  /** how many of the latest messages with text to recall for (default 6) */
  turns?: number;
  /** the token budget of the block (default 1000) */
  maxTokens?: number;
  k?: number;
  minScore?: number;
  filter?: Filter;
  recall?: RecallOptions;
  signal?: AbortSignal;
}

/**
 * memoryPrompt recalls the session's memories for the latest turns (the latest weigh most)
 * and answers the memory block to put in `system`; "" when nothing relevant is remembered.
 */
export async function memoryPrompt(options: MemoryPromptOptions): Promise<string> {
  const client = clientOf(options);
  const turns: RecallTurn[] = options.messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, text: textOf(m) }))
    .filter((t) => t.text.trim())
    .slice(-(options.turns ?? 6));
  if (turns.length === 0) return "";
  const lastUser = [...turns].reverse().find((t) => t.role === "user");
  const r = await client.request("POST /v1/recall", {
    body: {
      ...options.recall,
      query: lastUser?.text ?? "",
      turns,
      session: options.session,
      k: options.k ?? options.recall?.k,
      min_score: options.minScore ?? options.recall?.min_score,
      filter: options.filter ?? options.recall?.filter,
      prompt_tokens: options.maxTokens ?? 1000,
    },
    signal: options.signal,
  });
  return r.prompt ?? "";
}
