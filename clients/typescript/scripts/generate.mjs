#!/usr/bin/env node
// generate.mjs writes src/openapi.ts, the client's types, from server/openapi.json:
// one declaration per schema in components.schemas, the Operations interface
// (path and query parameters, request body and response of every operation,
// keyed "METHOD /path"), and two constants the drift test compares against the
// document: schemaFields (the properties of every named schema) and
// operations (what each operation takes and answers).
//
//   node scripts/generate.mjs            write src/openapi.ts
//   node scripts/generate.mjs --check    exit 1, naming every difference, when
//                                        src/openapi.ts is not what the document makes
//
// ENGRAM_OPENAPI names another document (default ../../server/openapi.json).
// Standard library only: the test runs it before anything is installed.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const packageDir = join(here, "..");
export const defaultSpec = join(packageDir, "..", "..", "server", "openapi.json");
export const outFile = join(packageDir, "src", "openapi.ts");

// Schema names that would shadow a global of the language get another name.
const RENAME = { Error: "ErrorBody" };
const GLOBALS = new Set(["Error", "Object", "Array", "String", "Number", "Boolean", "Date", "Map", "Set", "Promise", "Response", "Request", "Headers", "Record", "Partial"]);

export function typeName(schemaName) {
  if (RENAME[schemaName]) return RENAME[schemaName];
  return GLOBALS.has(schemaName) ? schemaName + "Schema" : schemaName;
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** operationsOf lists the document's operations in document order. */
export function operationsOf(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of METHODS) {
      if (item[m]) out.push({ key: `${m.toUpperCase()} ${path}`, method: m.toUpperCase(), path, item, op: item[m] });
    }
  }
  return out;
}

function resolve(doc, x) {
  while (x && x.$ref) {
    const parts = x.$ref.replace(/^#\//, "").split("/");
    x = parts.reduce((o, p) => o?.[p], doc);
  }
  return x;
}

function refName(ref) {
  const m = /^#\/components\/schemas\/(.+)$/.exec(ref);
  if (!m) throw new Error(`unsupported $ref ${ref}`);
  return typeName(m[1]);
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (k) => (IDENT.test(k) ? k : JSON.stringify(k));

function doc1(s) {
  const parts = [];
  if (s.description) parts.push(s.description);
  const limits = [];
  if (s.format) limits.push(`format ${s.format}`);
  if (s.minimum !== undefined) limits.push(`minimum ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) limits.push(`above ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined) limits.push(`maximum ${s.maximum}`);
  if (s.maxItems !== undefined) limits.push(`at most ${s.maxItems} items`);
  if (s.default !== undefined) limits.push(`default ${JSON.stringify(s.default)}`);
  if (limits.length) parts.push(`(${limits.join("; ")})`);
  return parts.join(" ");
}

function comment(text, indent) {
  if (!text) return "";
  const safe = text.replace(/\*\//g, "*\\/");
  return `${indent}/** ${safe} */\n`;
}

/** tsType renders schema s as a TypeScript type; indent is the current line's indentation. */
export function tsType(s, indent = "") {
  if (s === undefined || s === true) return "unknown";
  if (s === false) return "never";
  if (s.$ref) return refName(s.$ref);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (s.allOf) return s.allOf.map((x) => wrap(tsType(x, indent))).join(" & ");
  if (s.oneOf || s.anyOf) return (s.oneOf ?? s.anyOf).map((x) => wrap(tsType(x, indent))).join(" | ");
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length === 0) {
    return s.properties || s.additionalProperties !== undefined ? objectType(s, indent) : "unknown";
  }
  return types
    .map((t) => {
      switch (t) {
        case "string":
          return "string";
        case "integer":
        case "number":
          return "number";
        case "boolean":
          return "boolean";
        case "null":
          return "null";
        case "array":
          return `${wrap(tsType(s.items, indent))}[]`;
        case "object":
          return objectType(s, indent);
        default:
          throw new Error(`unsupported type ${t}`);
      }
    })
    .join(" | ");
}

function wrap(t) {
  return /[|&]/.test(t) && !/^\{[\s\S]*\}$/.test(t) ? `(${t})` : t;
}

function objectType(s, indent) {
  const props = Object.entries(s.properties ?? {});
  const extra = s.additionalProperties;
  if (props.length === 0) {
    if (extra === false) return "Record<string, never>";
    if (extra === undefined || extra === true) return "{ [key: string]: unknown }";
    return `{ [key: string]: ${tsType(extra, indent)} }`;
  }
  const req = new Set(s.required ?? []);
  const inner = indent + "  ";
  let out = "{\n";
  for (const [name, p] of props) {
    out += comment(doc1(p), inner);
    out += `${inner}${key(name)}${req.has(name) ? "" : "?"}: ${tsType(p, inner)};\n`;
  }
  if (extra !== undefined && extra !== false) out += `${inner}[key: string]: unknown;\n`;
  return out + indent + "}";
}

/** fieldsOf lists the properties of schema s (through $ref, allOf, and every variant of oneOf and anyOf), sorted. */
export function fieldsOf(doc, s) {
  s = resolve(doc, s);
  if (!s) return [];
  const names = new Set(Object.keys(s.properties ?? {}));
  for (const x of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) for (const n of fieldsOf(doc, x)) names.add(n);
  return [...names].sort();
}

function jsonBody(content) {
  return content?.["application/json"];
}

/** describe gives what the generated module says about the document, as plain data. */
export function describe(doc) {
  const schemaFields = {};
  for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) {
    schemaFields[typeName(name)] = fieldsOf(doc, s);
  }
  const operations = {};
  for (const { key: k, method, path, item, op } of operationsOf(doc)) {
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p));
    const rb = resolve(doc, op.requestBody);
    const body = jsonBody(rb?.content);
    let bodyKind = "none";
    if (body) bodyKind = resolve(doc, body.schema)?.type === "string" ? "text" : "json";
    const [status, resp] = Object.entries(op.responses ?? {}).find(([code]) => /^2/.test(code)) ?? ["200", {}];
    const r = resolve(doc, resp);
    let response = "none";
    const ct = Object.keys(r?.content ?? {});
    if (ct.includes("application/json")) response = r.content["application/json"].schema ? "json" : "untyped";
    else if (ct.includes("application/x-ndjson")) response = "ndjson";
    else if (ct.some((c) => c.startsWith("text/"))) response = "text";
    else if (ct.length) response = "binary";
    else response = "untyped";
    operations[k] = {
      method,
      path,
      pathParams: params.filter((p) => p.in === "path").map((p) => p.name),
      query: params.filter((p) => p.in === "query").map((p) => p.name),
      body: bodyKind,
      bodyRequired: !!rb?.required,
      bodyFields: body ? fieldsOf(doc, body.schema) : [],
      status: Number(status),
      response,
      responseFields: response === "json" ? fieldsOf(doc, r.content["application/json"].schema) : [],
    };
  }
  return { schemaFields, operations };
}

function paramsType(params, indent) {
  if (params.length === 0) return "Record<string, never>";
  const inner = indent + "  ";
  let out = "{\n";
  for (const p of params) {
    out += comment(doc1({ ...p.schema, description: p.description }), inner);
    out += `${inner}${key(p.name)}${p.required ? "" : "?"}: ${tsType(p.schema, inner)};\n`;
  }
  return out + indent + "}";
}

/** generate renders src/openapi.ts for the document doc. */
export function generate(doc) {
  let out = `// @ts-self-types="./openapi.d.ts"
// Code generated by scripts/generate.mjs from server/openapi.json (OpenAPI ${doc.openapi}, API ${doc.info?.version}); DO NOT EDIT.
// Regenerate with \`node scripts/generate.mjs\` in clients/typescript; the drift test
// (test/drift.test.ts, run by \`go test ./clients/typescript\`) fails while this file is stale.

`;
  for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) {
    out += comment(doc1(s), "");
    const t = tsType(s, "");
    out += /^\{\n/.test(t) ? `export interface ${typeName(name)} ${t}\n\n` : `export type ${typeName(name)} = ${t};\n\n`;
  }
  out += `/** Every operation of the API, keyed "METHOD /path": its parameters, body and answer. */\nexport interface Operations {\n`;
  const d = describe(doc);
  for (const { key: k, item, op } of operationsOf(doc)) {
    const info = d.operations[k];
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p));
    const rb = resolve(doc, op.requestBody);
    const body = jsonBody(rb?.content);
    const resp = resolve(doc, op.responses?.[String(info.status)]);
    let response = "unknown";
    if (info.response === "json") response = tsType(resp.content["application/json"].schema, "    ");
    else if (info.response === "ndjson" || info.response === "text") response = "string";
    else if (info.response === "binary") response = "ReadableStream<Uint8Array>";
    else if (info.response === "none") response = "undefined";
    out += comment(op.summary, "  ");
    out += `  ${JSON.stringify(k)}: {\n`;
    out += `    path: ${paramsType(params.filter((p) => p.in === "path"), "    ")};\n`;
    out += `    query: ${paramsType(params.filter((p) => p.in === "query"), "    ")};\n`;
    out += `    body: ${body ? tsType(body.schema, "    ") + (rb.required ? "" : " | undefined") : "undefined"};\n`;
    out += `    response: ${response};\n`;
    out += `  };\n`;
  }
  out += "}\n\n";
  out += `/** The properties of every schema in components.schemas, for the drift test. */\nexport const schemaFields = ${lines(d.schemaFields)} as const;\n\n`;
  out += `/** What each operation takes and answers, for the client's request code and the drift test. */\nexport const operations = ${lines(d.operations)} as const;\n`;
  return out;
}

// lines writes an object as JSON with one member a line.
function lines(o) {
  return "{\n" + Object.entries(o).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(",\n") + "\n}";
}

/** diff names what differs between two describe() results: want (the document) and got (the module). */
export function diff(want, got, wantName = "server/openapi.json", gotName = "src/openapi.ts") {
  const out = [];
  const cmpList = (what, a = [], b = []) => {
    for (const x of a) if (!b.includes(x)) out.push(`${what}: ${JSON.stringify(x)} is in ${wantName}, missing from ${gotName}`);
    for (const x of b) if (!a.includes(x)) out.push(`${what}: ${JSON.stringify(x)} is in ${gotName}, missing from ${wantName}`);
  };
  cmpList("schemas", Object.keys(want.schemaFields), Object.keys(got.schemaFields));
  for (const [name, fields] of Object.entries(want.schemaFields)) {
    if (got.schemaFields[name]) cmpList(`schema ${name} field`, fields, got.schemaFields[name]);
  }
  cmpList("operations", Object.keys(want.operations), Object.keys(got.operations));
  for (const [k, w] of Object.entries(want.operations)) {
    const g = got.operations[k];
    if (!g) continue;
    cmpList(`${k} path parameter`, w.pathParams, g.pathParams);
    cmpList(`${k} query parameter`, w.query, g.query);
    cmpList(`${k} body field`, w.bodyFields, g.bodyFields);
    cmpList(`${k} response field`, w.responseFields, g.responseFields);
    for (const f of ["body", "bodyRequired", "status", "response"]) {
      if (w[f] !== g[f]) out.push(`${k} ${f}: ${JSON.stringify(w[f])} in ${wantName}, ${JSON.stringify(g[f])} in ${gotName}`);
    }
  }
  return out;
}

/** extract reads the describe() data back out of a generated module's text. */
export function extract(text) {
  const grab = (name) => {
    const m = new RegExp(`export const ${name} = ([\\s\\S]*?) as const;`).exec(text);
    return m ? JSON.parse(m[1]) : {};
  };
  return { schemaFields: grab("schemaFields"), operations: grab("operations") };
}

function main() {
  const specPath = process.env.ENGRAM_OPENAPI || defaultSpec;
  const doc = JSON.parse(readFileSync(specPath, "utf8"));
  const text = generate(doc);
  if (!process.argv.includes("--check")) {
    writeFileSync(outFile, text);
    console.log(`generate: ${relative(process.cwd(), outFile)} from ${relative(process.cwd(), specPath)}`);
    return;
  }
  let old = "";
  try {
    old = readFileSync(outFile, "utf8");
  } catch {
    console.error(`generate --check: ${outFile} does not exist; run node scripts/generate.mjs`);
    process.exit(1);
  }
  if (old === text) {
    console.log("generate --check: src/openapi.ts matches server/openapi.json");
    return;
  }
  const problems = diff(describe(doc), extract(old));
  if (problems.length === 0) {
    const a = old.split("\n"), b = text.split("\n");
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    problems.push(`line ${i + 1} differs (a type, description or order changed):\n  src/openapi.ts: ${a[i]}\n  generated:      ${b[i]}`);
  }
  console.error("generate --check: src/openapi.ts is stale against server/openapi.json:\n- " + problems.join("\n- ") +
    "\nrun `node scripts/generate.mjs` in clients/typescript, then give the client whatever new routes need");
  process.exit(1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
