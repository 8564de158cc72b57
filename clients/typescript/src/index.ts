// @ts-self-types="./index.d.ts"
// engram's TypeScript client: Client (the whole HTTP API of `memctl serve`), Memory (a
// mem0-style facade), typed errors, and the types generated from server/openapi.json
// (the schema Memory as MemoryJSON, the name the Go side gives it).
// Adapters: "@engramdb/engram/langchain" (LangChain.js) and "@engramdb/engram/ai" (the Vercel AI SDK).
export * from "./client.js";
export * from "./errors.js";
export * from "./memory.js";
export { Memory } from "./memory.js";
export type * from "./openapi.js";
export type { Memory as MemoryJSON } from "./openapi.js";
export { operations, schemaFields } from "./openapi.js";
