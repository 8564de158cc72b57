// @ts-self-types="./memory.d.ts"
// A mem0-style facade: Memory with add, search, getAll, get, update, delete, deleteAll
// and history, in the shapes of mem0's TypeScript Memory (results under `results`, an item
// as {id, memory, metadata, createdAt, updatedAt, score}); userId, agentId or runId names
// the engram session. Differences: engram stores the texts it is given (no model extracts
// facts), and search ranks by engram's hybrid recall with scores in [0, 1].
import { Client, type ClientOptions, type Recalled } from "./client.js";
import { NotFoundError } from "./errors.js";
import type { Filter, Memory as EngramMemory, Metadata } from "./openapi.js";

/** Whose memories: the first of userId, agentId, runId given is the engram session. */
export interface Scope {
  userId?: string;
  agentId?: string;
  runId?: string;
}

/** A chat message as mem0 takes it. */
export interface Message {
  role: string;
  content: string;
}

/** A memory in mem0's shape, with engram's own fields alongside. */
export interface MemoryItem {
  id: string;
  memory: string;
  /** the engram session */
  userId: string;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
  tags: string[];
  source: string;
  importance: number;
  /** search only: the final score, in [0, 1] */
  score?: number;
  /** search only: the score's parts */
  scoreParts?: Recalled["score"];
}

/** One change of a memory, oldest first, as mem0's history lists them. */
export interface HistoryEvent {
  id: string;
  memoryId: string;
  oldMemory: string | null;
  newMemory: string;
  event: "ADD" | "UPDATE";
  /** engram's change kind: add, update, merge, supersede, older, restore */
  change: string;
  createdAt: string;
  updatedAt: string | null;
}

export interface AddOptions extends Scope {
  metadata?: Metadata;
  source?: string;
  tags?: string[];
}

export interface SearchOptions extends Scope {
  /** at most this many (default 100) */
  limit?: number;
  /** engram's filter language ({"metadata.k": v}, {tags: "x"}); a key that is not an engram field is read as metadata */
  filters?: Filter;
  /** the least final score a result needs, in [0, 1] */
  threshold?: number;
}

export interface GetAllOptions extends Scope {
  limit?: number;
  filters?: Filter;
}

function sessionOf(s: Scope): string {
  const v = s.userId ?? s.agentId ?? s.runId;
  if (v === undefined) throw new TypeError("give userId, agentId or runId: engram keeps each one's memories in a session of its own");
  return v;
}

const FIELDS = new Set(["session", "source", "tags", "importance", "access_count", "created", "updated", "last_access", "and", "or", "not"]);

function filters(f?: Filter): Filter | undefined {
  if (!f || Object.keys(f).length === 0) return undefined;
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [FIELDS.has(k) || k.startsWith("metadata.") ? k : "metadata." + k, v]));
}

function item(m: EngramMemory | Recalled): MemoryItem {
  const out: MemoryItem = {
    id: m.id,
    memory: m.text,
    userId: m.session,
    metadata: m.metadata ?? {},
    createdAt: m.created,
    updatedAt: m.updated,
    tags: m.tags ?? [],
    source: m.source ?? "",
    importance: m.importance,
  };
  if ("score" in m && m.score) {
    out.score = m.score.final;
    out.scoreParts = m.score;
  }
  return out;
}

/** mem0's Memory over `memctl serve`: `new Memory({url, token})` or `new Memory({client})`. */
export class Memory {
  readonly client: Client;

  constructor(options: ClientOptions & { client?: Client } = {}) {
    this.client = options.client ?? new Client(options);
  }

  /**
   * Remember a text or messages (system messages are skipped). Each result's event is ADD
   * for a new memory, UPDATE where a near-duplicate was merged (its earlier version is in
   * history).
   */
  async add(messages: string | Message | Message[], options: AddOptions): Promise<{ results: { id: string; memory: string; event: "ADD" | "UPDATE" }[] }> {
    const session = sessionOf(options);
    const list = typeof messages === "string" ? [messages] : (Array.isArray(messages) ? messages : [messages]).filter((m) => m.role !== "system").map((m) => m.content);
    const results: { id: string; memory: string; event: "ADD" | "UPDATE" }[] = [];
    for (const text of list) {
      if (!text?.trim()) continue;
      const r = await this.client.remember(session, text, { metadata: options.metadata, source: options.source, tags: options.tags });
      r.ids.forEach((id, i) => results.push({ id, memory: text, event: r.merged[i] ? "UPDATE" : "ADD" }));
    }
    return { results };
  }

  /** The session's memories that best match query, best first, each with its score. */
  async search(query: string, options: SearchOptions): Promise<{ results: MemoryItem[] }> {
    const r = await this.client.recall(query, sessionOf(options), {
      k: Math.min(options.limit ?? 100, 1000),
      filter: filters(options.filters),
      min_score: options.threshold,
    });
    return { results: r.results.map(item) };
  }

  /** The session's memories, newest first, at most limit (default 100). */
  async getAll(options: GetAllOptions): Promise<{ results: MemoryItem[] }> {
    const limit = options.limit ?? 100;
    const where = filters(options.filters);
    const out: MemoryItem[] = [];
    for await (const m of this.client.memories({ session: sessionOf(options), limit: Math.min(limit, 1000), where })) {
      if (out.length >= limit) break;
      out.push(item(m));
    }
    return { results: out };
  }

  /** One memory, or null when there is none. */
  async get(memoryId: string): Promise<MemoryItem | null> {
    try {
      return item(await this.client.get(memoryId));
    } catch (e) {
      if (e instanceof NotFoundError) return null;
      throw e;
    }
  }

  /** Replace a memory's text (re-embedded; the old text goes to its history). */
  async update(memoryId: string, data: string, metadata?: Metadata): Promise<{ message: string }> {
    await this.client.update(memoryId, metadata === undefined ? { text: data } : { text: data, metadata });
    return { message: "Memory updated successfully!" };
  }

  async delete(memoryId: string): Promise<{ message: string }> {
    await this.client.delete(memoryId);
    return { message: "Memory deleted successfully!" };
  }

  /** Forget every memory of the session. */
  async deleteAll(options: Scope): Promise<{ message: string }> {
    const r = await this.client.forget({ session: sessionOf(options), all: true });
    return { message: `${r.forgotten ?? 0} memories deleted successfully!` };
  }

  /** The memory's changes, oldest first: ADD, then one UPDATE per version. */
  async history(memoryId: string): Promise<HistoryEvent[]> {
    const [current, versions] = await Promise.all([this.client.get(memoryId), this.client.history(memoryId)]);
    const texts = [...versions.map((v) => v.memory!.text), current.text];
    const first = versions[0]?.memory ?? current;
    const events: HistoryEvent[] = [
      { id: `${memoryId}#0`, memoryId, oldMemory: null, newMemory: texts[0]!, event: "ADD", change: "add", createdAt: first.created, updatedAt: null },
    ];
    versions.forEach((v, i) =>
      events.push({
        id: `${memoryId}#${v.version}`,
        memoryId,
        oldMemory: texts[i]!,
        newMemory: texts[i + 1]!,
        event: "UPDATE",
        change: v.change ?? "update",
        createdAt: first.created,
        updatedAt: v.at ?? null,
      }),
    );
    return events;
  }

  reset(): Promise<never> {
    return Promise.reject(new Error("engram does not wipe a store from a client; use deleteAll({userId}) per session, or `memctl forget --session S --all`"));
  }
}
