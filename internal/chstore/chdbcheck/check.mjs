// Replays a suite written by TestPortableSuite (internal/chstore) on ClickHouse
// 26.7 through chDB: every statement must run, and every SELECT must return as
// many rows as it did on 18.16.
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

const dir = mkdtempSync(join(tmpdir(), "chdbcheck-"));
const session = new Session(dir);
const version = session.query("SELECT version()", "TSV").trim();
const failures = [];
for (const [i, st] of suite.entries()) {
  const where = `statement ${i + 1}: ${st.sql.slice(0, 160)}`;
  try {
    const out = session.query(st.sql, "JSONEachRow");
    if (st.rows !== undefined) {
      const rows = out.split("\n").filter(Boolean).length;
      if (rows !== st.rows) failures.push(`${where}\n  ${rows} rows on ${version}, ${st.rows} on 18.16`);
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
