// @ts-self-types="./memory.d.ts"
// A mem0-style facade: Memory with add, search, getAll, get, update, delete, deleteAll,
// history and reset, in the shapes of mem0's TypeScript Memory (results under `results`, an
// item as {id, memory, metadata, createdAt, updatedAt, score}). userId, agentId and runId are
// mem0's scopes: the engram session is the userId, else the agentId, else the runId; the
// others are kept on each memory (metadata agent_id, run_id), and search, getAll, deleteAll
// and reset select exactly the memories of the scope given. add with infer (the default, as in
// mem0) keeps what the user states about themselves, with the server's distiller; infer: false
// stores every message verbatim. search ranks by engram's hybrid recall with scores in [0, 1].
import { Client, type ClientOptions, type Recalled } from "./client.js";
import { NotFoundError } from "./errors.js";
import type { Filter, Memory as EngramMemory, Metadata } from "./openapi.js";

/** Whose memories: the first of userId, agentId, runId given is the engram session. */
export interface Scope {
  userId?: string;
  agentId?: string;
  runId?: string;
}

/** A chat message as mem0 takes it (time: when it was said, RFC 3339). */
export interface Message {
  role: string;
  content: string;
  time?: string;
}

/** A memory in mem0's shape, with engram's own fields alongside. */
export interface MemoryItem {
  id: string;
  memory: string;
  /** the engram session (under the scope key the call named it by) */
  userId?: string;
  agentId?: string;
  runId?: string;
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
  /** keep only what the user states about themselves (default true, as in mem0); false: every message verbatim */
  infer?: boolean;
  /** in (0, 1] */
  importance?: number;
  /** when messages without their own time were said (RFC 3339) */
  time?: string;
}

/** One result of add. */
export interface AddResult {
  id: string;
  /** the memory's text (absent for a key without the read right) */
  memory: string;
  event: "ADD" | "UPDATE" | "DELETE";
  /** UPDATE: the text it replaced */
  previousMemory?: string;
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

/** The scope IDs as the server takes them; at least one is needed. */
function scopeOf(s: Scope): { user_id?: string; agent_id?: string; run_id?: string } {
  if (s.userId === undefined && s.agentId === undefined && s.runId === undefined) {
    throw new TypeError("give userId, agentId or runId: engram keeps each one's memories in a session of its own");
  }
  return dropUndefined({ user_id: s.userId, agent_id: s.agentId, run_id: s.runId });
}

/** The scope key the session was named by. */
function sessionKey(s: Scope): "userId" | "agentId" | "runId" {
  return s.userId !== undefined ? "userId" : s.agentId !== undefined ? "agentId" : s.runId !== undefined ? "runId" : "userId";
}

function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const FIELDS = new Set(["session", "source", "tags", "importance", "access_count", "created", "updated", "last_access", "and", "or", "not"]);

function filters(f?: Filter): Filter | undefined {
  if (!f || Object.keys(f).length === 0) return undefined;
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [FIELDS.has(k) || k.startsWith("metadata.") ? k : "metadata." + k, v]));
}

function item(m: EngramMemory | Recalled, key: "userId" | "agentId" | "runId" = "userId"): MemoryItem {
  const metadata = { ...(m.metadata ?? {}) };
  const scope: Partial<MemoryItem> = { [key]: m.session };
  if (typeof metadata.agent_id === "string") scope.agentId = metadata.agent_id;
  if (typeof metadata.run_id === "string") scope.runId = metadata.run_id;
  delete metadata.agent_id;
  delete metadata.run_id;
  const out: MemoryItem = {
    id: m.id,
    memory: m.text,
    ...scope,
    metadata,
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
   * Remember a text (a user message) or messages (system messages are skipped). With infer
   * (the default) only what the user states about themselves is kept, and memories it changes
   * are updated or deleted; infer: false stores each message verbatim. Each result's event is
   * ADD, UPDATE (previousMemory: the earlier text, also in history) or DELETE.
   */
  async add(messages: string | Message | Message[], options: AddOptions): Promise<{ results: AddResult[] }> {
    const scope = scopeOf(options);
    const list = typeof messages === "string" ? [{ role: "user", content: messages }] : Array.isArray(messages) ? messages : [messages];
    const r = await this.client.rememberMessages(
      "",
      list.map((m) => dropUndefined({ role: m.role, text: m.content, time: m.time })),
      dropUndefined({ ...scope, infer: options.infer ?? true, metadata: options.metadata, source: options.source, tags: options.tags, importance: options.importance, time: options.time }),
    );
    return {
      results: r.events.map((e) =>
        dropUndefined({ id: e.id, memory: e.memory ?? "", event: e.event.toUpperCase() as AddResult["event"], previousMemory: e.previous }),
      ),
    };
  }

  /** The scope's memories that best match query, best first, each with its score. */
  async search(query: string, options: SearchOptions): Promise<{ results: MemoryItem[] }> {
    const r = await this.client.recall({
      ...scopeOf(options),
      query,
      k: Math.min(options.limit ?? 100, 1000),
      filter: filters(options.filters),
      min_score: options.threshold,
    });
    return { results: r.results.map((m) => item(m, sessionKey(options))) };
  }

  /** The scope's memories, newest first, at most limit (default 100). */
  async getAll(options: GetAllOptions): Promise<{ results: MemoryItem[] }> {
    const limit = options.limit ?? 100;
    const where = filters(options.filters);
    const out: MemoryItem[] = [];
    for await (const m of this.client.memories({ ...scopeOf(options), limit: Math.min(limit, 1000), where })) {
      if (out.length >= limit) break;
      out.push(item(m, sessionKey(options)));
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

  /** Forget every memory of the scope (restorable for the server's retention, as forget). */
  async deleteAll(options: Scope): Promise<{ message: string }> {
    const r = await this.client.forget({ ...scopeOf(options), all: true });
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

  /**
   * Forget every memory the key can reach: of the scope given, or without one (mem0's reset())
   * of every session the key may read. Restorable as forget is, until purgeAfter (the server's
   * --forget-retention): client.restore((await client.forgotten()).map((m) => m.id)).
   */
  async reset(options: Scope = {}): Promise<{ message: string; forgotten: number; restorable: boolean; purgeAfter?: string }> {
    const scoped = options.userId !== undefined || options.agentId !== undefined || options.runId !== undefined;
    const answers = scoped
      ? [await this.client.forget({ ...scopeOf(options), all: true })]
      : await Promise.all((await this.client.sessions()).map((s) => this.client.forget({ session: s.name, all: true })));
    const forgotten = answers.reduce((n, a) => n + (a.forgotten ?? 0), 0);
    const after = answers.map((a) => a.purge_after).filter((x): x is string => !!x).sort();
    return dropUndefined({ message: `${forgotten} memories forgotten`, forgotten, restorable: answers.every((a) => a.restorable ?? false), purgeAfter: after[0] });
  }
}
