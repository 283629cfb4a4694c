// Reads traces written through ingestion back with the official REST client
// (@langfuse/client), against a running all-in-one Glassbox.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { LangfuseClient } from "@langfuse/client";
import { emitTraces } from "./lib/emit.mjs";

const client = new LangfuseClient();

// eventually retries fn until it stops throwing (ingestion is asynchronous).
async function eventually(fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

// The OTel SDK registers itself globally once per process, so the traces are
// emitted once and both tests read them.
let runTag;
let traces;
let deleted;
before(async () => {
  ({ runTag, traces } = await emitTraces({ count: 3 }));
});

test("traces and observations written through OTLP read back with @langfuse/client", async () => {
  const health = await client.api.health.health();
  assert.equal(health.status, "OK");
  const projects = await client.api.projects.get();
  assert.equal(projects.data.length, 1, "a project key sees its own project");

  for (const sent of traces) {
    const trace = await eventually(async () => {
      const t = await client.api.trace.get(sent.traceId);
      assert.equal(t.observations.length, 4);
      return t;
    });
    assert.equal(trace.id, sent.traceId);
    assert.equal(trace.name, "agent-run");
    assert.equal(trace.userId, sent.userId);
    assert.equal(trace.sessionId, sent.sessionId);
    assert.deepEqual([...trace.tags].sort(), [runTag, "sdk-test"].sort());
    assert.deepEqual(trace.input, { question: sent.question });
    assert.ok(Math.abs(trace.totalCost - 0.00019) < 1e-9, `totalCost ${trace.totalCost}`);
    assert.ok(trace.latency >= 0);
    assert.match(trace.htmlPath, new RegExp(sent.traceId));

    const byName = Object.fromEntries(trace.observations.map((o) => [o.name, o]));
    const root = byName["agent-run"];
    const gen = byName["llm-call"];
    assert.equal(root.type, "AGENT");
    assert.equal(root.parentObservationId ?? null, null);
    assert.equal(gen.type, "GENERATION");
    assert.equal(gen.parentObservationId, root.id);
    assert.equal(gen.model, "gpt-4o-mini");
    assert.deepEqual(gen.usageDetails, { input: 12, output: 7, total: 19 });
    assert.equal(byName["search-tool"].type, "TOOL");
    assert.equal(byName["parse-results"].parentObservationId, byName["search-tool"].id);

    const one = await client.api.legacy.observationsV1.get(gen.id);
    assert.equal(one.traceId, sent.traceId);
    assert.equal(one.model, "gpt-4o-mini");

    const v2 = await client.api.observations.getMany({ traceId: sent.traceId });
    assert.equal(v2.data.length, 4);
  }

  const listed = await client.api.trace.list({ userId: traces[0].userId, tags: [runTag] });
  assert.ok(listed.data.some((t) => t.id === traces[0].traceId));
  assert.ok(listed.data.every((t) => t.userId === traces[0].userId));
  assert.equal(listed.meta.page, 1);

  const session = await client.api.sessions.get(traces[0].sessionId);
  assert.deepEqual(session.traces.map((t) => t.id).sort(), traces.map((t) => t.traceId).sort());

  deleted = traces[1].traceId;
  await client.api.trace.delete(deleted);
  await assert.rejects(client.api.trace.get(deleted), (err) => err.statusCode === 404);
});

test("metrics of those traces through the SDK's v1 and v2 metrics clients", async () => {
  const live = traces.filter((t) => t.traceId !== deleted); // a deleted trace counts no more
  const from = new Date(Date.now() - 3600_000).toISOString();
  const to = new Date(Date.now() + 3600_000).toISOString();
  const onlyThisRun = [{ column: "tags", operator: "any of", value: [runTag], type: "arrayOptions" }];

  // v2: generations of this run by model, cost and tokens summed.
  const v2 = await eventually(async () => {
    const res = await client.api.metrics.metrics({
      query: JSON.stringify({
        view: "observations",
        dimensions: [{ field: "providedModelName" }, { field: "type" }],
        metrics: [
          { measure: "count", aggregation: "count" },
          { measure: "totalCost", aggregation: "sum" },
          { measure: "totalTokens", aggregation: "sum" },
        ],
        filters: [...onlyThisRun, { column: "type", operator: "=", value: "GENERATION", type: "string" }],
        fromTimestamp: from,
        toTimestamp: to,
      }),
    });
    assert.equal(res.data.length, 1, JSON.stringify(res.data));
    assert.equal(Number(res.data[0].count_count), live.length);
    return res;
  });
  const row = v2.data[0];
  assert.equal(row.providedModelName, "gpt-4o-mini");
  assert.equal(row.type, "GENERATION");
  assert.ok(Math.abs(row.sum_totalCost - 0.00019 * live.length) < 1e-9, `sum_totalCost ${row.sum_totalCost}`);
  assert.equal(Number(row.sum_totalTokens), 19 * live.length);

  // v1: traces of this run per user, counted by day.
  const v1 = await client.api.legacy.metricsV1.metrics({
    query: JSON.stringify({
      view: "traces",
      dimensions: [{ field: "userId" }],
      metrics: [{ measure: "count", aggregation: "count" }],
      filters: onlyThisRun,
      timeDimension: { granularity: "day" },
      fromTimestamp: from,
      toTimestamp: to,
      orderBy: [{ field: "userId", direction: "asc" }],
    }),
  });
  const perUser = {};
  for (const r of v1.data) perUser[r.userId] = (perUser[r.userId] ?? 0) + Number(r.count_count);
  const want = {};
  for (const t of live) want[t.userId] = (want[t.userId] ?? 0) + 1;
  assert.deepEqual(perUser, want);

  // A query the engine refuses comes back as the SDK's error with a 400.
  await assert.rejects(
    client.api.metrics.metrics({ query: JSON.stringify({ view: "observations", metrics: [{ measure: "nope", aggregation: "sum" }], fromTimestamp: from, toTimestamp: to }) }),
    (err) => err.statusCode === 400,
  );
});
