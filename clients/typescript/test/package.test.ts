// The package as a user imports it: its subpath exports resolve (by the package's own
// name), each has its type declarations, and the client needs nothing but the platform.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { packageDir } from "./env.js";

interface PackageJSON {
  name: string;
  type: string;
  exports: Record<string, string | { types: string; default: string }>;
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional: boolean }>;
}

const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as PackageJSON;

test("every subpath export resolves by the package's name and has its .d.ts", async () => {
  assert.equal(pkg.type, "module");
  const want: Record<string, string[]> = {
    ".": ["Client", "Memory", "EngramError", "NotFoundError", "ROUTES", "operations"],
    "./langchain": ["EngramRetriever", "EngramChatMessageHistory"],
    "./ai": ["engramTools", "rememberTool", "recallTool", "memoryPrompt"],
  };
  for (const [sub, names] of Object.entries(want)) {
    const e = pkg.exports[sub];
    assert.ok(e && typeof e === "object", `exports lacks ${sub}`);
    assert.ok(existsSync(join(packageDir, e.types)), `${sub}: ${e.types} was not built`);
    const mod = (await import(sub === "." ? pkg.name : pkg.name + sub.slice(1))) as Record<string, unknown>;
    for (const n of names) assert.ok(mod[n], `${pkg.name}${sub.slice(1)} does not export ${n}`);
  }
});

test("no runtime dependency; the frameworks are optional peers", () => {
  assert.equal(pkg.dependencies, undefined);
  for (const p of ["@langchain/core", "ai", "zod"]) {
    assert.ok(pkg.peerDependencies[p], `${p} is not a peer dependency`);
    assert.equal(pkg.peerDependenciesMeta[p]?.optional, true);
  }
  // The core entry point imports only its own modules.
  for (const f of ["index", "client", "errors", "memory", "openapi"]) {
    const src = readFileSync(join(packageDir, "dist", "src", f + ".js"), "utf8");
    for (const m of src.matchAll(/^import .* from "([^"]+)";?$/gm)) assert.match(m[1]!, /^\.\//, `dist/src/${f}.js imports ${m[1]}`);
  }
});
