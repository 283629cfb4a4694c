// Langfuse's published API, as its official SDK (@langfuse/core, generated
// from Langfuse's API definition) carries it: every operation (method and
// path), the type each answers, and the fields of those types.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const dist = path.dirname(require.resolve("@langfuse/core"));
const mjs = fs.readFileSync(path.join(dist, "index.mjs"), "utf8");
const dts = fs.readFileSync(path.join(dist, "index.d.ts"), "utf8");

// sections splits text at each match of re, naming each part by the match.
function sections(text, re) {
  const starts = [];
  for (const m of text.matchAll(re)) starts.push({ name: m[1] ?? m[2], at: m.index });
  return starts.map((s, i) => ({ name: s.name, body: text.slice(s.at, i + 1 < starts.length ? starts[i + 1].at : text.length) }));
}

// operations: [{ client, method, op: "GET /api/public/...", type }], one per
// generated client method. Path parameters read {name}.
export const operations = (() => {
  const returns = {};
  for (const c of sections(dts, /^declare class (\w+) \{/gm)) {
    for (const m of c.body.matchAll(/^ {4}(\w+)\([^\n]*\): HttpResponsePromise<([^>]+)>;/gm)) {
      returns[`${c.name}.${m[1]}`] = m[2].replace(/^LangfuseAPI\./, "");
    }
  }
  const out = [];
  for (const c of sections(mjs, /^(?:var (\w+) = class \{|class (\w+) \{)/gm)) {
    for (const m of sections(c.body, /async __(\w+)\(/g)) {
      const call = /url_exports\.join\(\s*[^\n]*\n\s*(["`])(\/api\/[^"`]*)\1\s*\),\s*method:\s*"([A-Z]+)"/.exec(m.body);
      if (!call) continue;
      const route = call[2].replace(/\$\{encodeURIComponent\(([^)]*)\)\}/g, "{$1}").replace(/\$\{([^}]*)\}/g, "{$1}");
      out.push({ client: c.name, method: m.name, op: `${call[3]} ${route}`, type: returns[`${c.name}.${m.name}`] });
    }
  }
  return out;
})();

// normalize makes operations comparable whatever their parameters are named.
export const normalize = (op) => op.replace(/\{[^}]*\}/g, "{}");

// readInterfaces reads the interfaces declared at indent in text; those
// inside a namespace are named "Namespace.Name", their bases looked up in
// the namespace first.
const interfaces = {};
function readInterfaces(text, indent, prefix) {
  const re = new RegExp(`^ {${indent}}interface ([\\w$]+)(?: extends ([^{]*))? \\{`, "gm");
  for (const i of sections(text, re)) {
    const head = new RegExp(`^ {${indent}}interface [\\w$]+(?: extends ([^{]*))? \\{`).exec(i.body);
    const fields = {};
    let depth = 0;
    const field = new RegExp(`^ {${indent + 4}}"?([A-Za-z_$][\\w$]*)"?(\\?)?: (.*?);?$`);
    for (const line of i.body.split("\n").slice(1)) {
      if (depth === 0 && new RegExp(`^ {${indent}}\\}`).test(line)) break;
      const f = depth === 0 && field.exec(line);
      if (f) fields[f[1]] = { optional: Boolean(f[2]), type: f[3] };
      depth += (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;
    }
    const bases = head[1] ? head[1].split(",").map((s) => s.trim()) : [];
    const local = (b) => (prefix && text.includes(`interface ${b} `) ? prefix + b : b);
    interfaces[prefix + i.name] = { extends: bases.map(local), fields };
  }
}
readInterfaces(dts, 0, "");
for (const n of sections(dts, /^declare namespace ([\w$]+) \{/gm)) {
  readInterfaces(n.body.slice(0, n.body.indexOf("\n}\n") + 3), 4, `${n.name}.`);
}
// aliases: type X = ...; with comments removed and space collapsed.
const aliases = {};
for (const m of dts.matchAll(/^type ([\w$]+) =([\s\S]*?);\n/gm)) {
  aliases[m[1]] = m[2].replace(/\/\*[\s\S]*?\*\//g, "").replace(/\s+/g, " ").trim();
}

// shape returns a type's fields ({name: {optional, type}}) with those it
// extends, a union's as the union of its members' fields (required only
// where every member requires it), or null for a type it cannot read.
export function shape(type) {
  if (interfaces[type]) {
    const out = {};
    for (const base of interfaces[type].extends) Object.assign(out, shape(base) ?? {});
    return Object.assign(out, interfaces[type].fields);
  }
  const alias = aliases[type];
  if (alias && /^[\w$.]+( \| [\w$.]+)+$/.test(alias)) {
    const members = alias.split(" | ").map(shape);
    if (members.some((m) => m === null)) return null;
    const out = {};
    for (const m of members) {
      for (const [k, v] of Object.entries(m)) out[k] = { type: v.type, optional: out[k]?.optional || v.optional };
    }
    for (const k of Object.keys(out)) if (members.some((m) => !m[k])) out[k].optional = true;
    return out;
  }
  if (alias && /^[\w$]+$/.test(alias)) return shape(alias);
  return null;
}

// elementType reads "X[]" as X.
export const elementType = (t) => /^([\w$]+)\[\]$/.exec(t ?? "")?.[1];
