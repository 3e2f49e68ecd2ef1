// Writes the client's types from schema/contract.schema.json with json-schema-to-typescript:
// every request and reply under `$defs` becomes an exported type (src/contract/requests.ts,
// replies.ts and parts.ts), and x-sqs-waiter's action table, error types, limits and attribute
// names become constants (src/contract.ts, which re-exports the types). `--check` writes nothing
// and exits 1 when a committed file differs from what the schema gives.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, "..", "..", "..", "schema", "contract.schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const extra = schema["x-sqs-waiter"];

// A description beside a $ref makes json-schema-to-typescript declare the referenced type again
// under a new name (JobReply1): the field's own words stay in the schema, not in the types.
function withoutRefDescriptions(value) {
  if (Array.isArray(value)) return value.map(withoutRefDescriptions);
  if (typeof value !== "object" || value === null) return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(k === "description" && "$ref" in value)) out[k] = withoutRefDescriptions(v);
  }
  return out;
}

// The definitions alone: a root with no fields of its own, dropped from the output.
const root = { title: "Root", type: "object", additionalProperties: false, $defs: withoutRefDescriptions(schema.$defs) };
let types = await compile(root, "Root", {
  bannerComment: "",
  unreachableDefinitions: true,
  additionalProperties: false,
  strictIndexSignatures: true,
  format: true,
});
types = types
  .replace(/^export interface Root \{\}\n/m, "")
  .replace(/ \*\n \* This interface was referenced by `Root`'s JSON-Schema\n \* via the `definition` "\w+"\.\n/g, "")
  .replace(/\/\*\*\n \* This interface was referenced by `Root`'s JSON-Schema\n \* via the `definition` "\w+"\.\n \*\/\n/g, "");

// A newer function may answer a status or a catch-up policy this contract does not list
// (docs/contract.md): the unions stay open, their names still offered by the editor.
for (const open of ["JobStatus", "CatchUp"]) {
  const union = new RegExp(`(export type ${open} =[^;]*);`);
  if (!union.test(types)) throw new Error(`generate: no union ${open} to open`);
  types = types.replace(union, "$1 | (string & {});");
}

const names = Object.keys(schema.$defs);
const actions = extra.actions
  .map((f) => `  { action: ${JSON.stringify(f.action)}, request: ${JSON.stringify(f.request)}, reply: ${JSON.stringify(f.reply)} },`)
  .join("\n");
const constants = `
/** The contract's limits (docs/contract.md). */
export const LIMITS = ${JSON.stringify(extra.limits, null, 2)} as const;

/** The message attributes sqs-waiter sets on what it sends. */
export const ATTRIBUTES = ${JSON.stringify(extra.attributes, null, 2)} as const;

/** Attribute names a caller cannot set: sqs-waiter replaces them. */
export const RESERVED_ATTRIBUTE_PREFIX = ${JSON.stringify(extra.reserved_attribute_prefix)};

/** Every errorType the function answers with, and whether the same request may succeed later. */
export const ERROR_TYPES = ${JSON.stringify(Object.fromEntries(extra.error_types.map((t) => [t.name, t.retryable])), null, 2)} as const satisfies Record<ErrorType, boolean>;

/** Every request form the function reads: its action, request type and reply type. */
export const ACTIONS = [
${actions}
] as const;

/** The name of every type of the contract. */
export type ContractTypeName = ${names.map((n) => JSON.stringify(n)).join(" | ")};
`;
// One file per side of the wire, so that none is a wall of types: what only requests use, what
// only replies use, and the parts both use (a job's attributes, windows, repeat, status).
const refsOf = (value, out = new Set()) => {
  if (Array.isArray(value)) value.forEach((v) => refsOf(v, out));
  else if (typeof value === "object" && value !== null) {
    if (typeof value.$ref === "string") out.add(value.$ref.replace("#/$defs/", ""));
    Object.values(value).forEach((v) => refsOf(v, out));
  }
  return out;
};
const reach = (roots) => {
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    refsOf(schema.$defs[name]).forEach(visit);
  };
  roots.forEach(visit);
  return seen;
};
const fromRequests = reach([...extra.actions.map((f) => f.request), "RedriveRequest"]);
const fromReplies = reach([...extra.actions.map((f) => f.reply), "Failure"]);
const fileOf = (name) =>
  fromRequests.has(name) && !fromReplies.has(name) ? "requests" : fromReplies.has(name) && !fromRequests.has(name) ? "replies" : "parts";

// json2ts's output, cut into its top-level declarations (each with its doc comment).
const blocks = [];
for (const line of types.split("\n")) {
  const starts = line.startsWith("/**") || (line.startsWith("export ") && !blocks.at(-1)?.open);
  if (starts || blocks.length === 0) blocks.push({ lines: [], open: line.startsWith("/**") });
  const block = blocks.at(-1);
  block.lines.push(line);
  if (line.startsWith("export ")) block.open = false;
}
const files = { requests: [], replies: [], parts: [] };
for (const block of blocks) {
  const text = block.lines.join("\n").trim();
  if (!text) continue;
  const name = /^export (?:type|interface) (\w+)/m.exec(text)?.[1];
  if (!name) throw new Error(`a declaration without a name: ${text.slice(0, 80)}`);
  files[fileOf(name)].push({ name, text });
}
const declaredNames = Object.values(files).flatMap((f) => f.map((d) => d.name)).sort();
if (JSON.stringify(declaredNames) !== JSON.stringify(Object.keys(schema.$defs).sort())) {
  throw new Error(`declared ${declaredNames.join(", ")}; the schema defines ${Object.keys(schema.$defs).join(", ")}`);
}
const banner =
  "// Code generated by scripts/generate.mjs (json-schema-to-typescript) from schema/contract.schema.json. DO NOT EDIT.\n";
const sides = {
  requests: "The requests the function reads (a request goes on the wire as its fields plus `action`).",
  replies: "The function's replies.",
  parts: "The parts requests and replies share.",
};
const out = {};
for (const [file, declared] of Object.entries(files)) {
  const imports = {};
  for (const { name } of declared) {
    for (const ref of refsOf(schema.$defs[name])) {
      const from = fileOf(ref);
      if (from !== file) (imports[from] ??= new Set()).add(ref);
    }
  }
  const importLines = Object.entries(imports)
    .sort()
    .map(([from, refs]) => `import type { ${[...refs].sort().join(", ")} } from "./${from}.js";\n`)
    .join("");
  out[`src/contract/${file}.ts`] =
    `${banner}// ${sides[file]}\n\n${importLines}${importLines ? "\n" : ""}${declared.map((d) => d.text).join("\n\n")}\n`;
}
out["src/contract.ts"] =
  banner +
  "// The contract's requests and replies, as in the schema, and the constants it carries.\n\n" +
  `import type { ErrorType } from "./contract/${fileOf("ErrorType")}.js";\n\n` +
  'export type * from "./contract/requests.js";\nexport type * from "./contract/replies.js";\nexport type * from "./contract/parts.js";\n' +
  constants;

if (process.argv.includes("--check")) {
  const stale = Object.entries(out).filter(([path, text]) => {
    try {
      return readFileSync(join(here, "..", path), "utf8") !== text;
    } catch {
      return true;
    }
  });
  if (stale.length > 0) {
    console.error(`${stale.map(([p]) => p).join(", ")} differ from schema/contract.schema.json: run \`make clients-types\``);
    process.exit(1);
  }
} else {
  mkdirSync(join(here, "..", "src", "contract"), { recursive: true });
  for (const [path, text] of Object.entries(out)) writeFileSync(join(here, "..", path), text);
  console.log(`wrote ${Object.keys(out).join(", ")}`);
}
