// Replays a suite written by TestPortableSuite (internal/chstore) on ClickHouse
// 26.7 through chDB: every statement must run, every SELECT must return as
// many rows as it did on 18.16, and every metrics query the same values.
//
//   node check.mjs SUITE.jsonl
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session } from "chdb";

const file = process.argv[2];
if (!file) {
  console.error("usage: node check.mjs SUITE.jsonl");
  process.exit(2);
}
const suite = readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));

// normal makes a value comparable across releases: numbers (64-bit integers
// arrive quoted) to 9 significant digits, sums of floats being added in
// another order.
function normal(v) {
  if (Array.isArray(v)) return v.map(normal);
  if (typeof v === "number" || (typeof v === "string" && v !== "" && !isNaN(Number(v)))) {
    return Number(Number(v).toPrecision(9));
  }
  return v;
}

const dir = mkdtempSync(join(tmpdir(), "chdbcheck-"));
const session = new Session(dir);
const version = session.query("SELECT version()", "TSV").trim();
const failures = [];
for (const [i, st] of suite.entries()) {
  const where = `statement ${i + 1}: ${st.sql.slice(0, 160)}`;
  try {
    const out = session.query(st.sql, st.values ? "JSONCompactEachRow" : "JSONEachRow");
    const lines = out.split("\n").filter(Boolean);
    if (st.rows !== undefined && lines.length !== st.rows) {
      failures.push(`${where}\n  ${lines.length} rows on ${version}, ${st.rows} on 18.16`);
    } else if (st.values) {
      const got = lines.map((line) => JSON.parse(line));
      // Metrics queries order their groups, except by values a row may share;
      // compare the rows as sorted sets.
      const key = (row) => JSON.stringify(row.map(normal));
      const a = got.map(key).sort(), b = st.values.map(key).sort();
      const diff = a.findIndex((row, i) => row !== b[i]);
      if (diff >= 0) failures.push(`${where}\n  ${a[diff]} on ${version}\n  ${b[diff]} on 18.16`);
    }
  } catch (err) {
    failures.push(`${where}\n  ${err.message}`);
  }
}
session.cleanup();
rmSync(dir, { recursive: true, force: true });

for (const f of failures) console.error(f);
console.log(`ClickHouse ${version}: ${suite.length - failures.length} of ${suite.length} statements as on 18.16`);
process.exit(failures.length ? 1 : 0);
