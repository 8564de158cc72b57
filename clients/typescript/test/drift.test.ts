// The drift test: the client against server/openapi.json, in both directions. It fails,
// naming each difference, when src/openapi.ts is not what scripts/generate.mjs makes of the
// document (a schema, field, operation or parameter added or removed on either side), when
// an operation has no client method (ROUTES) or a method names an operation the document
// lacks, and when a hand-typed answer (UntypedResponses) has gained a schema. The
// mutation cases prove each check fires.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Client, EXCLUDED, ROUTES, UNTYPED_RESPONSES } from "../src/index.js";
import { operations, schemaFields } from "../src/openapi.js";
import { generator, packageDir, readOpenAPI, type Description, type OpenAPIDoc } from "./env.js";

const module: Description = { schemaFields, operations } as unknown as Description;

/** routeProblems names every operation of the document without a client method, and the reverse. */
function routeProblems(want: Description): string[] {
  const out: string[] = [];
  const routed = new Map(Object.entries(ROUTES).map(([name, op]) => [op as string, name]));
  for (const op of Object.keys(want.operations)) {
    if (!routed.has(op) && !(op in EXCLUDED)) {
      out.push(`server/openapi.json has ${op}; the client has no method for it (add one and its entry in ROUTES in src/client.ts, or an EXCLUDED entry saying why)`);
    }
  }
  for (const [name, op] of Object.entries(ROUTES)) {
    if (!(op in want.operations)) out.push(`ROUTES.${name} names ${op}, which server/openapi.json does not have`);
    if (typeof (Client.prototype as unknown as Record<string, unknown>)[name] !== "function") out.push(`ROUTES.${name}: Client has no method ${name}`);
  }
  for (const op of Object.keys(EXCLUDED)) {
    if (!(op in want.operations)) out.push(`EXCLUDED names ${op}, which server/openapi.json does not have`);
    if (routed.has(op)) out.push(`${op} is both in ROUTES (${routed.get(op)}) and EXCLUDED`);
  }
  for (const op of UNTYPED_RESPONSES) {
    const w = want.operations[op];
    if (w && w.response === "json") out.push(`server/openapi.json now gives ${op} a response schema: drop its hand-written type from UntypedResponses in src/client.ts`);
  }
  for (const [name, op] of Object.entries(ROUTES)) {
    const w = want.operations[op];
    if (w && w.response === "untyped" && !(UNTYPED_RESPONSES as readonly string[]).includes(op)) {
      out.push(`${op} (ROUTES.${name}) has no response schema in server/openapi.json: type its answer in UntypedResponses in src/client.ts`);
    }
  }
  return out;
}

test("src/openapi.ts is what scripts/generate.mjs makes of server/openapi.json", async () => {
  const gen = await generator();
  const doc = readOpenAPI();
  const problems = gen.diff(gen.describe(doc), module);
  assert.deepEqual(problems, [], "run `node scripts/generate.mjs` in clients/typescript:\n" + problems.join("\n"));
  const committed = readFileSync(join(packageDir, "src", "openapi.ts"), "utf8");
  assert.ok(committed === gen.generate(doc), "src/openapi.ts differs from the generator's output (a type or description changed): run `node scripts/generate.mjs`");
});

test("every operation of server/openapi.json has a client method, and every method an operation", async () => {
  const gen = await generator();
  const problems = routeProblems(gen.describe(readOpenAPI()));
  assert.deepEqual(problems, [], problems.join("\n"));
});

test("the drift checks name a route or field missing on either side", async () => {
  const gen = await generator();
  const clone = (): OpenAPIDoc => readOpenAPI();

  // A field the document drops, and one it gains.
  let doc = clone();
  delete doc.components.schemas["RecallRequest"]!.properties!["min_score"];
  doc.components.schemas["Memory"]!.properties!["as_of"] = { type: "string" };
  let problems = gen.diff(gen.describe(doc), module);
  assert.ok(problems.includes('schema RecallRequest field: "min_score" is in src/openapi.ts, missing from server/openapi.json'), problems.join("\n"));
  assert.ok(problems.includes('schema Memory field: "as_of" is in server/openapi.json, missing from src/openapi.ts'), problems.join("\n"));
  assert.notEqual(gen.generate(doc), readFileSync(join(packageDir, "src", "openapi.ts"), "utf8"));

  // A query parameter and an inline body field.
  doc = clone();
  const list = doc.paths["/v1/memories"]!["get"] as { parameters: { name: string }[] };
  list.parameters = list.parameters.filter((p) => p.name !== "cursor");
  const restore = doc.paths["/v1/restore"]!["post"] as { requestBody: { content: { "application/json": { schema: { properties: Record<string, unknown> } } } } };
  restore.requestBody.content["application/json"].schema.properties["purge_after"] = { type: "string" };
  problems = gen.diff(gen.describe(doc), module);
  assert.ok(problems.includes('GET /v1/memories query parameter: "cursor" is in src/openapi.ts, missing from server/openapi.json'), problems.join("\n"));
  assert.ok(problems.includes('POST /v1/restore body field: "purge_after" is in server/openapi.json, missing from src/openapi.ts'), problems.join("\n"));

  // A route the document drops, and one it gains.
  doc = clone();
  delete doc.paths["/v1/memories/{id}/revert"];
  doc.paths["/v1/memories/{id}/pin"] = { post: { summary: "Pin a memory", responses: { "200": { description: "pinned" } } } };
  const routes = routeProblems(gen.describe(doc));
  assert.ok(routes.some((p) => p.startsWith("ROUTES.revert names POST /v1/memories/{id}/revert, which server/openapi.json does not have")), routes.join("\n"));
  assert.ok(routes.some((p) => p.startsWith("server/openapi.json has POST /v1/memories/{id}/pin; the client has no method for it")), routes.join("\n"));
  problems = gen.diff(gen.describe(doc), module);
  assert.ok(problems.includes('operations: "POST /v1/memories/{id}/pin" is in server/openapi.json, missing from src/openapi.ts'), problems.join("\n"));

  // A hand-typed answer that gains a schema.
  doc = clone();
  (doc.paths["/v1/sessions"]!["get"] as { responses: Record<string, unknown> }).responses["200"] = {
    description: "sessions",
    content: { "application/json": { schema: { type: "object", properties: { sessions: { type: "array" } } } } },
  };
  assert.ok(routeProblems(gen.describe(doc)).some((p) => p.startsWith("server/openapi.json now gives GET /v1/sessions a response schema")));
});
