// @ts-self-types="./langchain.d.ts"
// LangChain.js adapters: EngramRetriever (a BaseRetriever over recall) and
// EngramChatMessageHistory (a BaseListChatMessageHistory over a session's short-term
// memory), so an existing chain gains long-term memory by swapping one object.
import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import type { CallbackManagerForRetrieverRun } from "@langchain/core/callbacks/manager";
import { Document, type DocumentInterface } from "@langchain/core/documents";
import { AIMessage, type BaseMessage, ChatMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { BaseRetriever, type BaseRetrieverInput } from "@langchain/core/retrievers";
import { Client, type ClientOptions, type RecallOptions, type Recalled, type RememberOptions } from "./client.js";
import type { Filter } from "./openapi.js";

/** Where an adapter finds the server: a Client, or the options to make one. */
export type Connection = { client?: Client } & ClientOptions;

function clientOf(c: Connection): Client {
  return c.client ?? new Client(c);
}

/** What an EngramRetriever recalls from and how. */
export interface EngramRetrieverInput extends BaseRetrieverInput, Connection {
  /** the session to recall from (required unless allSessions) */
  session?: string;
  /** recall across every session in the key's scope */
  allSessions?: boolean;
  /** how many documents (default 5) */
  k?: number;
  /** the least final score, in [0, 1] */
  minScore?: number;
  /** engram's filter language (docs/format/filter.md) */
  filter?: Filter;
  /** any other recall option (mode, fusion, weights, no_decay, ...) */
  recall?: RecallOptions;
}

/** The metadata of a document EngramRetriever returns: the memory's own metadata, then engram's fields. */
export interface EngramDocumentMetadata {
  [key: string]: unknown;
  id: string;
  session: string;
  source: string;
  tags: string[];
  importance: number;
  created: string;
  updated: string;
  /** the final score, in [0, 1] */
  score: number;
  /** the score's parts: vector, keyword, keyword_norm, fused, decay, weight, final */
  scores: Recalled["score"];
}

/** memoryDocument turns a recalled memory into a LangChain document. */
export function memoryDocument(m: Recalled): DocumentInterface<EngramDocumentMetadata> {
  return new Document<EngramDocumentMetadata>({
    id: m.id,
    pageContent: m.text,
    metadata: {
      ...(m.metadata ?? {}),
      id: m.id,
      session: m.session,
      source: m.source ?? "",
      tags: m.tags ?? [],
      importance: m.importance,
      created: m.created,
      updated: m.updated,
      score: m.score.final,
      scores: m.score,
    },
  });
}

/**
 * EngramRetriever recalls memories for a query (hybrid vector + keyword, decayed, weighted)
 * and returns them as documents, best first: `await retriever.invoke("what does Alice drink?")`.
 */
export class EngramRetriever extends BaseRetriever<EngramDocumentMetadata> {
  static override lc_name() {
    return "EngramRetriever";
  }
  override lc_namespace = ["engram", "retrievers"];

  readonly client: Client;
  session?: string;
  allSessions: boolean;
  k?: number;
  minScore?: number;
  filter?: Filter;
  recallOptions: RecallOptions;

  constructor(fields: EngramRetrieverInput) {
    super(fields);
    if (fields.session === undefined && !fields.allSessions) throw new TypeError("EngramRetriever needs a session, or allSessions: true");
    this.client = clientOf(fields);
    this.session = fields.session;
    this.allSessions = fields.allSessions ?? false;
    this.k = fields.k;
    this.minScore = fields.minScore;
    this.filter = fields.filter;
    this.recallOptions = fields.recall ?? {};
  }

  override async _getRelevantDocuments(query: string, _runManager?: CallbackManagerForRetrieverRun): Promise<DocumentInterface<EngramDocumentMetadata>[]> {
    const r = await this.client.recall({
      ...this.recallOptions,
      query,
      session: this.session,
      all_sessions: this.allSessions || undefined,
      k: this.k ?? this.recallOptions.k,
      min_score: this.minScore ?? this.recallOptions.min_score,
      filter: this.filter ?? this.recallOptions.filter,
    });
    return r.results.map(memoryDocument);
  }

  /** addDocuments remembers documents in the retriever's session (their metadata as engram metadata); returns the memory IDs. */
  async addDocuments(docs: DocumentInterface[], options: RememberOptions = {}): Promise<string[]> {
    if (this.session === undefined) throw new TypeError("addDocuments needs the retriever's session");
    const ids: string[] = [];
    for (const d of docs) {
      const metadata = Object.fromEntries(
        Object.entries(d.metadata ?? {}).filter(([, v]) => typeof v === "string" || typeof v === "number" || typeof v === "boolean"),
      ) as Record<string, string | number | boolean>;
      const r = await this.client.remember(this.session, d.pageContent, { metadata, ...options });
      ids.push(...r.ids);
    }
    return ids;
  }
}

/** What an EngramChatMessageHistory keeps and where. */
export interface EngramChatMessageHistoryInput extends Connection {
  /** the session whose conversation this is */
  session: string;
  /** the line before the summary of compressed turns (default "Summary of the earlier conversation:") */
  summaryPrefix?: string;
  /** also remember each user message in long-term memory (options: source, tags, ...; true: source "chat") */
  remember?: boolean | RememberOptions;
}

/** messageText is a message's text: its string content, or its text parts joined. */
export function messageText(m: BaseMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .map((p) => (typeof p === "string" ? p : p.type === "text" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : ""))
    .join("");
}

/** messageRole is the engram turn role of a message: user, assistant, system, or its own. */
export function messageRole(m: BaseMessage): string {
  switch (m.getType()) {
    case "human":
      return "user";
    case "ai":
      return "assistant";
    case "system":
      return "system";
    case "generic":
      return (m as ChatMessage).role;
    default:
      return m.getType();
  }
}

function turnMessage(role: string, text: string): BaseMessage {
  switch (role) {
    case "user":
    case "human":
      return new HumanMessage(text);
    case "assistant":
    case "ai":
      return new AIMessage(text);
    case "system":
      return new SystemMessage(text);
    default:
      return new ChatMessage({ content: text, role });
  }
}

/**
 * EngramChatMessageHistory keeps a session's conversation in engram's short-term memory:
 * the recent turns verbatim and, past the server's token budget, a summary of the older
 * ones (getMessages answers it first, as a system message). Messages without text (an AI
 * message that only calls tools) are not kept.
 */
export class EngramChatMessageHistory extends BaseListChatMessageHistory {
  static override lc_name() {
    return "EngramChatMessageHistory";
  }
  override lc_namespace = ["engram", "chat_history"];

  readonly client: Client;
  readonly session: string;
  summaryPrefix: string;
  private readonly rememberOptions?: RememberOptions;

  constructor(fields: EngramChatMessageHistoryInput) {
    super(fields);
    this.client = clientOf(fields);
    this.session = fields.session;
    this.summaryPrefix = fields.summaryPrefix ?? "Summary of the earlier conversation:";
    if (fields.remember) this.rememberOptions = fields.remember === true ? { source: "chat" } : fields.remember;
  }

  override async getMessages(): Promise<BaseMessage[]> {
    const c = await this.client.context(this.session);
    const out: BaseMessage[] = [];
    if (c.summary) out.push(new SystemMessage(`${this.summaryPrefix}\n${c.summary}`));
    for (const t of c.turns) out.push(turnMessage(t.role, t.text));
    return out;
  }

  override async addMessage(message: BaseMessage): Promise<void> {
    const text = messageText(message);
    if (!text.trim()) return;
    const role = messageRole(message);
    await this.client.addTurn(this.session, role, text);
    if (this.rememberOptions && role === "user") await this.client.remember(this.session, text, this.rememberOptions);
  }

  override async addMessages(messages: BaseMessage[]): Promise<void> {
    for (const m of messages) await this.addMessage(m);
  }

  override async clear(): Promise<void> {
    await this.client.clearContext(this.session);
  }
}
