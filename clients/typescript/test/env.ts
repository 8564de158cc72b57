// What the tests share: the server they run against (ENGRAM_URL, set by
// clients/typescript/typescript_test.go) and fresh session names.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const URL = process.env.ENGRAM_URL ?? "";

/** Test options that skip a server test when no server runs (the Go test fails on any skip). */
export const server = { skip: URL ? false : "ENGRAM_URL names no running memctl serve" };

export function session(prefix = "ts"): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

/** The package's root: dist/test/.. /.. */
export const packageDir = fileURLToPath(new globalThis.URL("../../", import.meta.url));

/** server/openapi.json: ENGRAM_OPENAPI, else the repository's copy beside the package. */
export const openapiPath = process.env.ENGRAM_OPENAPI ?? fileURLToPath(new globalThis.URL("../../../../server/openapi.json", import.meta.url));

export function readOpenAPI(): OpenAPIDoc {
  return JSON.parse(readFileSync(openapiPath, "utf8")) as OpenAPIDoc;
}

export interface OpenAPIDoc {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown>; [k: string]: unknown }> };
  [k: string]: unknown;
}

/** What scripts/generate.mjs exports (it is plain JavaScript, run before anything is installed). */
export interface Generator {
  describe(doc: unknown): Description;
  diff(want: Description, got: Description, wantName?: string, gotName?: string): string[];
  generate(doc: unknown): string;
}

export interface Description {
  schemaFields: Record<string, readonly string[]>;
  operations: Record<string, { method: string; path: string; response: string; [k: string]: unknown }>;
}

export async function generator(): Promise<Generator> {
  return (await import(new globalThis.URL("../../scripts/generate.mjs", import.meta.url).href)) as Generator;
}
