// @ts-self-types="./client.d.ts"
// The HTTP client: one method per operation of `memctl serve`, typed by the generated
// src/openapi.ts. ROUTES names the operation behind every method; the drift test checks
// it against server/openapi.json in both directions.
import { ConnectionError, EngramError, errorFor, JobFailedError } from "./errors.js";
import {
  operations,
  type ErrorBody,
  type Filter,
  type ForgetRequest,
  type Job,
  type Memory,
  type Operations,
  type RecallRequest,
  type RecallResult,
  type Score,
  type Version,
  type MemoryReceipt,
  type Task,
  type TaskReceipt,
  type Conversation,
  type ConversationReceipt,
} from "./openapi.js";

/** The address `memctl serve` listens on by default. */
export const DEFAULT_URL = "http://127.0.0.1:7077";

/** An operation of the API, "METHOD /path" as server/openapi.json names it. */
export type OperationKey = keyof Operations;

/**
 * ROUTES maps each Client method that sends a request to the operation it sends. Every
 * operation of server/openapi.json is here but those in EXCLUDED; the drift test fails
 * when one is missing on either side.
 */
export const ROUTES = {
  health: "GET /healthz",
  openapi: "GET /openapi.json",
  metrics: "GET /metrics",
  stats: "GET /v1/stats",
  sessions: "GET /v1/sessions",
  remember: "POST /v1/remember",
  recall: "POST /v1/recall",
  forget: "POST /v1/forget",
  forgotten: "GET /v1/forgotten",
  restore: "POST /v1/restore",
  get: "GET /v1/memories/{id}",
  list: "GET /v1/memories",
  update: "PATCH /v1/memories/{id}",
  delete: "DELETE /v1/memories/{id}",
  history: "GET /v1/memories/{id}/history",
  revert: "POST /v1/memories/{id}/revert",
  export: "POST /v1/export",
  cleanup: "POST /v1/cleanup",
  context: "GET /v1/sessions/{session}/context",
  addTurn: "POST /v1/sessions/{session}/turns",
  distill: "POST /v1/sessions/{session}/distill",
  clearContext: "DELETE /v1/sessions/{session}/context",
  tasks: "GET /v1/tasks",
  startTask: "POST /v1/tasks",
  task: "GET /v1/tasks/{id}",
  updateStep: "POST /v1/tasks/{id}/steps",
  finishTask: "POST /v1/tasks/{id}/finish",
  deleteTask: "DELETE /v1/tasks/{id}",
  adminStats: "GET /v1/admin/stats",
  flush: "POST /v1/admin/flush",
  check: "POST /v1/admin/check",
  compact: "POST /v1/admin/compact",
  adminCleanup: "POST /v1/admin/cleanup",
  archive: "GET /v1/admin/archive",
  restoreArchive: "POST /v1/admin/archive/restore",
  backup: "POST /v1/admin/backup",
  backupTar: "POST /v1/admin/backup.tar",
  adminExport: "GET /v1/admin/export",
  import: "POST /v1/admin/import",
  reembed: "POST /v1/admin/reembed",
  series: "GET /v1/admin/series",
  purgeForgotten: "POST /v1/admin/forgotten/purge",
  jobs: "GET /v1/jobs",
  job: "GET /v1/jobs/{id}",
  cancelJob: "POST /v1/jobs/{id}/cancel",
} as const satisfies Record<string, OperationKey>;

/** Operations of server/openapi.json the client leaves to other tools, and why. */
export const EXCLUDED: Partial<Record<OperationKey, string>> = {
  "POST /mcp": "the Model Context Protocol: use an MCP client (e.g. @modelcontextprotocol/sdk)",
  "GET /": "the web dashboard's HTML",
  "GET /ui/{file}": "the web dashboard's script and style sheet",
};

/** One session of GET /v1/sessions. */
export interface SessionInfo {
  name: string;
  memories: number;
  /** the latest update of its memories (RFC 3339) */
  newest: string;
}

/** Store statistics (GET /v1/stats, and /v1/admin/stats with the store's directory). */
export interface Stats {
  collection: string;
  fingerprint: string;
  dim: number;
  memories: number;
  sessions: number;
  archived: number;
  forgotten: number;
  tasks: number;
  backend: { [key: string]: unknown };
  dir?: string;
  [key: string]: unknown;
}

/** One point of GET /v1/admin/series. */
export interface SeriesPoint {
  t: string;
  memories: number;
  recalls: number;
  recall_p50_ms: number;
  recall_p95_ms: number;
  recall_max_ms: number;
}

/**
 * Answers of operations server/openapi.json describes without a schema, typed by hand.
 * The drift test fails once the document gives one of them a schema: then the generated
 * type takes over and the entry here goes.
 */
export interface UntypedResponses {
  "GET /healthz": { status: string };
  "GET /metrics": string;
  "GET /openapi.json": { openapi: string; paths: { [path: string]: unknown }; [key: string]: unknown };
  "GET /v1/stats": Stats;
  "GET /v1/sessions": { sessions: SessionInfo[] };
  "DELETE /v1/sessions/{session}/context": { cleared: boolean };
  "DELETE /v1/tasks/{id}": { deleted: boolean };
  "GET /v1/admin/stats": Stats;
  "POST /v1/admin/flush": { flushed: boolean; backend: { [key: string]: unknown } };
  "GET /v1/admin/archive": { memories: Memory[] };
  "GET /v1/admin/series": { interval_seconds: number; points: SeriesPoint[] };
  "GET /v1/jobs": { jobs: Job[] };
}

/** The operations UntypedResponses types by hand (for the drift test). */
export const UNTYPED_RESPONSES: readonly (keyof UntypedResponses)[] = [
  "GET /healthz",
  "GET /metrics",
  "GET /openapi.json",
  "GET /v1/stats",
  "GET /v1/sessions",
  "DELETE /v1/sessions/{session}/context",
  "DELETE /v1/tasks/{id}",
  "GET /v1/admin/stats",
  "POST /v1/admin/flush",
  "GET /v1/admin/archive",
  "GET /v1/admin/series",
  "GET /v1/jobs",
];

/** The answer of operation K. */
export type ResponseOf<K extends OperationKey> = K extends keyof UntypedResponses ? UntypedResponses[K] : Operations[K]["response"];
/** The body operation K takes. */
export type BodyOf<K extends OperationKey> = Operations[K]["body"];
/** The query parameters operation K takes. */
export type QueryOf<K extends OperationKey> = Operations[K]["query"];

type NoParams<T> = string extends keyof T ? true : false;

/** What one request of operation K sends: path parameters, query parameters and body, as its type says. */
export type RequestArgs<K extends OperationKey> = (NoParams<Operations[K]["path"]> extends true
  ? { path?: undefined }
  : { path: Operations[K]["path"] }) &
  (NoParams<Operations[K]["query"]> extends true ? { query?: undefined } : { query?: Operations[K]["query"] }) &
  (undefined extends Operations[K]["body"] ? { body?: Operations[K]["body"] } : { body: Operations[K]["body"] }) &
  RequestOptions;

/** Per-request settings. */
export interface RequestOptions {
  /** aborts the request */
  signal?: AbortSignal;
  /** overrides the client's timeout for this request, in milliseconds */
  timeoutMs?: number;
}

/** T with the members K always present (the server always sends them, the schema does not say so). */
export type WithRequired<T, K extends keyof T> = T & { [P in K]-?: Exclude<T[P], undefined> };

/** A recalled memory with its score's parts. */
export type Recalled = RecallResult & { score: Required<Score> };
/** What recall answers. */
export type RecallAnswer = Omit<ResponseOf<"POST /v1/recall">, "results"> & { results: Recalled[] };
/** What remember answers: one entry per chunk in each list. */
export type RememberAnswer = WithRequired<Pick<ResponseOf<"POST /v1/remember">, "ids" | "merged" | "superseded" | "older">, "ids" | "merged" | "superseded" | "older">;
/** What remember answers for messages, and distill: how many were read and the memories written and deleted (texts absent for a key without the read right). */
export type DistillAnswer = WithRequired<Pick<ResponseOf<"POST /v1/remember">, "turns" | "events" | "fallback">, "turns" | "events">;
/** One page of list. */
export type MemoryPage = WithRequired<ResponseOf<"GET /v1/memories">, "memories">;

/** What remember takes besides the session and the text (user_id, agent_id and run_id: mem0's scopes). */
export type RememberOptions = Omit<BodyOf<"POST /v1/remember">, "session" | "text" | "messages" | "infer">;
/** What rememberMessages takes besides the session and the messages: infer, and what remember takes. */
export type RememberMessagesOptions = Omit<BodyOf<"POST /v1/remember">, "session" | "text" | "messages">;
/** A message of a conversation to remember: role, text and time. */
export type MessageTurn = NonNullable<BodyOf<"POST /v1/remember">["messages"]>[number];
/** What recall takes besides the query and the session. */
export type RecallOptions = Omit<RecallRequest, "query" | "session">;
/** What list takes: a session, tags, source, since, until, limit, cursor, and where (a filter, as an object or its JSON). */
export type ListOptions = Omit<QueryOf<"GET /v1/memories">, "where"> & { where?: Filter | string };
/** The fields update replaces. */
export type UpdateFields = BodyOf<"PATCH /v1/memories/{id}">;
/** What adminCleanup takes: dry_run, older_than, include_recalled, session, filter. */
export type AdminCleanupOptions = NonNullable<BodyOf<"POST /v1/admin/cleanup">>;
/** What the recall turns are: role, text and time. */
export type RecallTurn = NonNullable<RecallRequest["turns"]>[number];

/** How a Client connects to `memctl serve`. */
export interface ClientOptions {
  /** the server's URL (default http://127.0.0.1:7077) */
  url?: string;
  /** the bearer key (`memctl keys add`) or token */
  token?: string;
  /** how long a request may take, in milliseconds (default 30000) */
  timeoutMs?: number;
  /** the fetch to use (default the platform's) */
  fetch?: typeof fetch;
  /** headers sent with every request */
  headers?: Record<string, string>;
}

/** How an admin job is run and waited for. */
export interface JobOptions {
  /** false: return the job as started instead of waiting for it to end (default true) */
  wait?: boolean;
  /** called with the job's state after every poll, progress in done/total (unit) */
  onProgress?: (job: Job) => void;
  /** how often to poll, in milliseconds (default 100) */
  pollMs?: number;
  /** how long to wait for the job, in milliseconds (default 600000) */
  timeoutMs?: number;
  /** aborting it asks the server to cancel the job, then rejects with the signal's reason */
  signal?: AbortSignal;
}

const enc = encodeURIComponent;

function queryString(q: Record<string, unknown> | undefined): string {
  if (!q) return "";
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) {
      const s = typeof item === "object" ? JSON.stringify(item) : String(item);
      parts.push(`${enc(k)}=${enc(s)}`);
    }
  }
  return parts.length ? "?" + parts.join("&") : "";
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Client is a connection to `memctl serve`: one method per operation, answers as the
 * server's JSON (memories in their one JSON form: id, session, text, source, tags,
 * importance, metadata, created, updated, last_access, access_count). Failures reject with
 * an EngramError subclass carrying the server's message and status.
 */
export class Client {
  readonly url: string;
  readonly token?: string;
  readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private readonly headers: Record<string, string>;

  constructor(url?: string | ClientOptions, options: ClientOptions = {}) {
    const o = typeof url === "object" ? url : { ...options, url: url ?? options.url };
    this.url = (o.url ?? DEFAULT_URL).replace(/\/+$/, "");
    this.token = o.token;
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.fetchFn = o.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
    this.headers = o.headers ?? {};
  }

  // -- plumbing ---------------------------------------------------------------------------

  /**
   * fetchRaw sends one request of operation op and returns the HTTP response once its
   * status is 2xx, for the caller to read (the timeout covers the answer's headers); any
   * other status rejects with an EngramError.
   */
  async fetchRaw<K extends OperationKey>(op: K, args: RequestArgs<K> = {} as RequestArgs<K>): Promise<Response> {
    const s = await this.send(op, args);
    s.finish();
    return s.res;
  }

  /**
   * request sends one request of operation op (any operation, by its "METHOD /path") and
   * decodes the answer: JSON as its type, JSON Lines and text as a string, a binary
   * answer (backup.tar) as a stream.
   */
  async request<K extends OperationKey>(op: K, args: RequestArgs<K> = {} as RequestArgs<K>): Promise<ResponseOf<K>> {
    const s = await this.send(op, args);
    const kind = operations[op].response;
    if (kind === "binary") {
      s.finish();
      return s.res.body as ResponseOf<K>;
    }
    let text: string;
    try {
      text = await s.res.text();
    } catch (e) {
      throw s.failure(e);
    } finally {
      s.finish();
    }
    if (kind === "ndjson" || kind === "text") return text as ResponseOf<K>;
    if (!text) return undefined as ResponseOf<K>;
    if (kind === "untyped" && !(s.res.headers.get("Content-Type") ?? "").includes("json")) return text as ResponseOf<K>;
    return JSON.parse(text) as ResponseOf<K>;
  }

  // send sends the request and checks the status; the timeout runs until finish is called.
  private async send<K extends OperationKey>(op: K, args: RequestArgs<K>) {
    const info = operations[op];
    const a = args as { path?: Record<string, string>; query?: Record<string, unknown>; body?: unknown } & RequestOptions;
    const path = info.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const v = a.path?.[name];
      if (v === undefined || v === null) throw new TypeError(`${op}: path parameter ${name} missing`);
      return enc(String(v));
    });
    const headers: Record<string, string> = { Accept: "application/json", ...this.headers };
    if (this.token) headers.Authorization = "Bearer " + this.token;
    let body: string | undefined;
    if (a.body !== undefined) {
      body = info.body === "text" && typeof a.body === "string" ? a.body : JSON.stringify(a.body);
    } else if (info.method !== "GET" && info.method !== "DELETE") {
      // The server takes every POST, PUT and PATCH as having a JSON body (guard.go).
      body = "{}";
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const ctrl = new AbortController();
    const timeoutMs = a.timeoutMs ?? this.timeoutMs;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort();
    }, timeoutMs);
    const onAbort = () => ctrl.abort(a.signal!.reason);
    if (a.signal?.aborted) onAbort();
    else a.signal?.addEventListener("abort", onAbort, { once: true });
    const finish = () => {
      clearTimeout(timer);
      a.signal?.removeEventListener("abort", onAbort);
    };
    const failure = (e: unknown): unknown => {
      if (timedOut) return new ConnectionError(0, `no answer from ${this.url} within ${timeoutMs} ms`, info.method, path, undefined, { cause: e });
      if (a.signal?.aborted) return a.signal.reason;
      if (e instanceof EngramError) return e;
      const why = (e as Error)?.cause ?? (e as Error)?.message ?? e;
      return new ConnectionError(0, `cannot reach ${this.url}: ${why}`, info.method, path, undefined, { cause: e });
    };
    let res: Response;
    try {
      res = await this.fetchFn(this.url + path + queryString(a.query), { method: info.method, headers, body, signal: ctrl.signal });
    } catch (e) {
      finish();
      throw failure(e);
    }
    if (!res.ok) {
      let text = "";
      try {
        text = await res.text();
      } catch (e) {
        throw failure(e);
      } finally {
        finish();
      }
      let errBody: ErrorBody | undefined;
      try {
        errBody = JSON.parse(text) as ErrorBody;
      } catch {
        // not JSON: the text is the message
      }
      throw errorFor(res.status, errBody?.error ?? (text.trim() || res.statusText), info.method, path, errBody);
    }
    return { res, finish, failure };
  }

  private call<N extends keyof typeof ROUTES>(name: N, args?: RequestArgs<(typeof ROUTES)[N]>): Promise<ResponseOf<(typeof ROUTES)[N]>> {
    return this.request(ROUTES[name], args);
  }

  // -- service ----------------------------------------------------------------------------

  /** {status: "ok"} while the server is up (no key needed). */
  health() {
    return this.call("health");
  }
  /** The OpenAPI document the server serves. */
  openapi() {
    return this.call("openapi");
  }
  /** Prometheus metrics in the text exposition format (admin right). */
  metrics() {
    return this.call("metrics");
  }
  /** Store statistics (admin right). */
  stats() {
    return this.call("stats");
  }
  /** The sessions that hold memories, in the key's scope, with counts. */
  async sessions(): Promise<SessionInfo[]> {
    return (await this.call("sessions")).sessions;
  }

  // -- long-term memory -------------------------------------------------------------------

  /**
   * Remember text in a session (chunked): ids, merged, superseded and older, one entry per chunk.
   * With user_id, agent_id or run_id in options (mem0's scopes) the session may be "" : the
   * first of them names it, and the others are kept on the memories.
   */
  async remember(session: string, text: string, options: RememberOptions = {}): Promise<RememberAnswer> {
    return (await this.call("remember", { body: { ...options, session, text } })) as RememberAnswer;
  }

  /**
   * Remember a conversation (system messages are skipped): with infer only what the user states
   * about themselves, updating or deleting the memories it changes; without, every message
   * verbatim. Answers turns and events (add, update, delete; texts only for a key that may read).
   */
  async rememberMessages(session: string, messages: MessageTurn[], options: RememberMessagesOptions = {}): Promise<DistillAnswer> {
    const r = await this.call("remember", { body: { ...options, session, messages } });
    return { ...r, turns: r.turns ?? 0, events: r.events ?? [] } as DistillAnswer;
  }

  /**
   * Recall the memories that best match a query in a session, best first, each with its
   * score's parts; `prompt_tokens` > 0 also answers the memory block for a prompt. Give a
   * whole request instead for turns without a query or all_sessions.
   */
  recall(query: string, session: string, options?: RecallOptions): Promise<RecallAnswer>;
  recall(request: RecallRequest): Promise<RecallAnswer>;
  async recall(query: string | RecallRequest, session?: string, options: RecallOptions = {}): Promise<RecallAnswer> {
    const body: RecallRequest = typeof query === "string" ? { ...options, query, session } : query;
    if (body.session === undefined && !body.all_sessions && body.user_id === undefined && body.agent_id === undefined && body.run_id === undefined) {
      throw new TypeError("recall needs a session (or user_id, agent_id, run_id), or all_sessions: true");
    }
    const r = await this.call("recall", { body });
    return { ...r, results: (r.results ?? []) as Recalled[] };
  }

  /**
   * Forget memories by IDs (all or nothing: NotFoundError names the unknown ones), or as a
   * request: session with all, a filter, purge. Forgotten memories stay restorable until
   * purge_after on a store that keeps them.
   */
  async forget(ids: string[] | ForgetRequest) {
    return this.call("forget", { body: Array.isArray(ids) ? { ids } : ids });
  }
  /** The trash: forgotten memories (of one session), most recently forgotten first. */
  async forgotten(session?: string) {
    return (await this.call("forgotten", { query: { session } })).memories ?? [];
  }
  /** Bring forgotten memories back under their IDs (all or nothing). */
  async restore(ids: string[]) {
    return this.call("restore", { body: { ids } });
  }
  /** Empty the trash for good (admin and write rights). */
  async purgeForgotten() {
    return this.call("purgeForgotten");
  }

  /** One memory by ID (NotFoundError when there is none, or it is outside the key's scope). */
  get(id: string, options: { vector?: boolean } = {}) {
    return this.call("get", { path: { id }, query: options.vector ? { vector: true } : undefined });
  }

  /** One page of memories, newest first; next_cursor is absent on the last page. */
  async list(options: ListOptions = {}): Promise<MemoryPage> {
    const { where, ...rest } = options;
    const query = { ...rest, where: where === undefined || typeof where === "string" ? where : JSON.stringify(where) };
    const page = await this.call("list", { query: dropUndefined(query) });
    return { ...page, memories: page.memories ?? [] };
  }

  /** Every memory list selects, page after page. */
  async *memories(options: Omit<ListOptions, "cursor"> = {}): AsyncGenerator<Memory> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...options, cursor });
      yield* page.memories;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /** Replace fields of a memory (a new text is re-embedded); the earlier version goes to its history. */
  update(id: string, fields: UpdateFields) {
    return this.call("update", { path: { id }, body: fields });
  }
  /** Delete one memory and its history (NotFoundError when there is none). */
  delete(id: string) {
    return this.call("delete", { path: { id } });
  }
  /** The earlier versions of a memory, oldest first. */
  async history(id: string): Promise<Version[]> {
    return (await this.call("history", { path: { id } })).versions ?? [];
  }
  /** Bring version `version` back; the current one goes to the history. */
  revert(id: string, version: number) {
    return this.call("revert", { path: { id }, body: { version } });
  }

  /** The memories a filter selects in the export format: the header line, then one memory per line. */
  async export(request: BodyOf<"POST /v1/export"> = {}): Promise<Record<string, unknown>[]> {
    const text = await this.call("export", { body: request });
    return parseLines(text);
  }

  /** Move stale memories of the key's sessions to the cold archive (or list them: dry_run). */
  cleanup(request: BodyOf<"POST /v1/cleanup"> = {}) {
    return this.call("cleanup", { body: request });
  }

  // -- short-term memory ------------------------------------------------------------------

  /** The session's conversation: the summary of compressed turns and the recent turns verbatim. */
  context(session: string) {
    return this.call("context", { path: { session } });
  }
  /** Append a turn; older turns are summarized past the token budget. Answers the conversation. */
  addTurn(session: string, role: string, text: string, options: { time?: string } = {}) {
    return this.call("addTurn", { path: { session }, body: dropUndefined({ role, text, time: options.time }) });
  }
  /** Turn the session's turns not yet distilled into long-term memories; distilling again stores nothing new. */
  async distill(session: string): Promise<DistillAnswer> {
    const r = await this.call("distill", { path: { session } });
    return { ...r, turns: r.turns ?? 0, events: r.events ?? [] } as DistillAnswer;
  }
  /** Clear the session's conversation. */
  clearContext(session: string) {
    return this.call("clearContext", { path: { session } });
  }

  // -- working memory ---------------------------------------------------------------------

  /** The tasks in the key's scope. */
  async tasks() {
    return (await this.call("tasks")).tasks ?? [];
  }
  /** Start a task (id: a name of your own; session: the session it works for). */
  startTask(goal: string, options: Omit<BodyOf<"POST /v1/tasks">, "goal"> = {}) {
    return this.call("startTask", { body: { ...options, goal } });
  }
  // Task IDs are per session: `session` names the task's session, needed only where the key
  // sees tasks of this ID in several sessions (the server answers 400 then).

  /** A task with its steps (NotFoundError when there is none). */
  task(id: string, options: QueryOf<"GET /v1/tasks/{id}"> = {}) {
    return this.call("task", { path: { id }, query: dropUndefined(options) });
  }
  /** Record a step (status pending, running, done, failed or skipped; a JSON result) and the next step. */
  updateStep(
    id: string,
    name: string,
    status: string,
    options: Omit<BodyOf<"POST /v1/tasks/{id}/steps">, "name" | "status"> & QueryOf<"POST /v1/tasks/{id}/steps"> = {},
  ) {
    const { session, ...rest } = options;
    return this.call("updateStep", { path: { id }, query: dropUndefined({ session }), body: { ...rest, name, status } });
  }
  /** Finish a task: done (default) or failed. */
  finishTask(id: string, status: "done" | "failed" = "done", options: QueryOf<"POST /v1/tasks/{id}/finish"> = {}) {
    return this.call("finishTask", { path: { id }, query: dropUndefined(options), body: { status } });
  }
  /** Delete a task. */
  deleteTask(id: string, options: QueryOf<"DELETE /v1/tasks/{id}"> = {}) {
    return this.call("deleteTask", { path: { id }, query: dropUndefined(options) });
  }

  // -- administration (admin right) -------------------------------------------------------

  /** Store statistics and directory. */
  adminStats() {
    return this.call("adminStats");
  }
  /** Write the in-memory index to segments. */
  flush() {
    return this.call("flush");
  }
  /** Verify checksums, index structure and the manifest (a job; result: ok, problems, unknown files). */
  check(options?: JobOptions) {
    return this.runJob("check", {}, options);
  }
  /** Flush, merge segments and drop deleted records (a job). */
  compact(options?: JobOptions) {
    return this.runJob("compact", {}, options);
  }
  /** Move stale memories to the cold archive, or list them with dry_run (a job). */
  adminCleanup(request: AdminCleanupOptions = {}, options?: JobOptions) {
    return this.runJob("adminCleanup", { body: request }, options);
  }
  /** The archived memories. */
  async archive(): Promise<Memory[]> {
    return (await this.call("archive")).memories;
  }
  /** Restore archived memories: some IDs, or all (a job). */
  restoreArchive(request: BodyOf<"POST /v1/admin/archive/restore">, options?: JobOptions) {
    return this.runJob("restoreArchive", { body: request }, options);
  }
  /** Write a consistent backup into a new directory under the server's --backup-root (a job). */
  backup(dir: string, options?: JobOptions) {
    return this.runJob("backup", { body: { dir } }, options);
  }
  /** A consistent backup of the store directory as a tar stream. */
  async backupTar(options: RequestOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const res = await this.fetchRaw("POST /v1/admin/backup.tar", options);
    return res.body as ReadableStream<Uint8Array>;
  }
  /** The export file of the store (or one session), as text: a header line, then one record per line. */
  async adminExport(query: QueryOf<"GET /v1/admin/export"> = {}, options: RequestOptions = {}): Promise<string> {
    return this.call("adminExport", { query: dropUndefined(query), ...options });
  }
  /** Import an export file (its text, as adminExport or `memctl export` write it) (a job). */
  import(exportFile: string, options?: JobOptions) {
    return this.runJob("import", { body: exportFile }, options);
  }
  /** Re-embed every memory with another embedder: lexical, onnx:DIR or ollama:MODEL on the server's machine (a job). */
  reembed(to: string, options?: JobOptions) {
    return this.runJob("reembed", { body: { to } }, options);
  }
  /** The dashboard's time series: memory count and recall latency per interval. */
  series() {
    return this.call("series");
  }
  /** The running job and the last finished ones, newest first. */
  async jobs(): Promise<Job[]> {
    return (await this.call("jobs")).jobs;
  }
  /** A job's state and progress. */
  job(id: string) {
    return this.call("job", { path: { id } });
  }
  /** Ask a job to stop at its next cancellation point. */
  cancelJob(id: string) {
    return this.call("cancelJob", { path: { id } });
  }

  /**
   * waitJob polls a job until it ends and answers it (result in `result`); a job that
   * failed or was cancelled rejects with JobFailedError.
   */
  async waitJob(job: Job | string, options: JobOptions = {}): Promise<Job> {
    let j = typeof job === "string" ? await this.job(job) : job;
    const id = j.id!;
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    const poll = options.pollMs ?? 100;
    for (;;) {
      options.onProgress?.(j);
      if (j.state !== "running") break;
      if (Date.now() > deadline) throw new EngramError(0, `job ${id} still ${j.state} after ${options.timeoutMs ?? 600_000} ms`, "GET", `/v1/jobs/${id}`);
      try {
        await sleep(poll, options.signal);
      } catch (e) {
        await this.cancelJob(id).catch(() => undefined);
        throw e;
      }
      j = await this.job(id);
    }
    if (j.state !== "done") throw new JobFailedError(j);
    return j;
  }

  private async runJob<N extends "check" | "compact" | "adminCleanup" | "restoreArchive" | "backup" | "import" | "reembed">(
    name: N,
    args: RequestArgs<(typeof ROUTES)[N]>,
    options: JobOptions = {},
  ): Promise<Job> {
    const job = (await this.call(name, { ...args, signal: options.signal })) as Job;
    return options.wait === false ? job : this.waitJob(job, options);
  }
}

// A key without the read right gets receipts instead of stored text from writes (IDs, counts,
// states); these guards tell the two answers apart.

/** isMemory reports whether a write's answer is the whole memory (not a MemoryReceipt). */
export function isMemory(m: Memory | MemoryReceipt): m is Memory {
  return "text" in m;
}

/** isTask reports whether a task change's answer is the whole task (not a TaskReceipt). */
export function isTask(t: Task | TaskReceipt): t is Task {
  return Array.isArray(t.steps);
}

/** isConversation reports whether addTurn's answer is the conversation (not a ConversationReceipt). */
export function isConversation(c: Conversation | ConversationReceipt): c is Conversation {
  return Array.isArray(c.turns);
}

/** parseLines decodes JSON Lines (an export file). */
export function parseLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
