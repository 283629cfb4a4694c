// Walks Langfuse's published API (every operation of the official SDK's
// generated client) against a started Glassbox: each operation is served or
// deliberately left out for a stated reason; each served one answers with
// the status the spec gives and with the field names of the spec's type.
//
//   LANGFUSE_BASE_URL=... LANGFUSE_PUBLIC_KEY=... LANGFUSE_SECRET_KEY=... node --test operations.test.mjs
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { elementType, normalize, operations, shape } from "./lib/spec.mjs";

const missing = ["LANGFUSE_BASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"].filter((k) => !process.env[k]);
if (missing.length > 0 && process.env.CI === "true") {
  throw new Error(`${missing.join(", ")} must be set when CI=true`);
}
const skip = missing.length > 0 ? `${missing.join(", ")} not set; start Glassbox and export them` : false;
const base = process.env.LANGFUSE_BASE_URL?.replace(/\/$/, "");
const auth = "Basic " + Buffer.from(`${process.env.LANGFUSE_PUBLIC_KEY}:${process.env.LANGFUSE_SECRET_KEY}`).toString("base64");

// Left out on purpose, each with the reason (the README lists them too).
const leftOut = {
  "GET /api/public/scim/ServiceProviderConfig": "SCIM: users come from sign-up, invitations and OIDC (SSO)",
  "GET /api/public/scim/ResourceTypes": "SCIM",
  "GET /api/public/scim/Schemas": "SCIM",
  "GET /api/public/scim/Users": "SCIM",
  "POST /api/public/scim/Users": "SCIM",
  "GET /api/public/scim/Users/{}": "SCIM",
  "DELETE /api/public/scim/Users/{}": "SCIM",
  "GET /api/public/integrations/blob-storage": "blob-storage export: the data is in the operator's own ClickHouse",
  "PUT /api/public/integrations/blob-storage": "blob-storage export",
  "GET /api/public/integrations/blob-storage/{}": "blob-storage export",
  "DELETE /api/public/integrations/blob-storage/{}": "blob-storage export",
  "POST /api/public/feedback": "feedback about Langfuse itself",
  "PATCH /api/public/v2/evaluators/{}": "evaluators are not versioned: create another and point the rule at it",
  "GET /api/public/v2/evaluators/{}/versions": "evaluators are not versioned",
};

// Routes that take an organization key: a project key is refused with 403.
const organizationRoutes = new Set([
  "POST /api/public/projects", "PUT /api/public/projects/{}", "DELETE /api/public/projects/{}",
  "GET /api/public/projects/{}/apiKeys", "POST /api/public/projects/{}/apiKeys", "DELETE /api/public/projects/{}/apiKeys/{}",
  "GET /api/public/organizations/projects", "GET /api/public/organizations/apiKeys",
  "GET /api/public/organizations/memberships", "PUT /api/public/organizations/memberships",
  "DELETE /api/public/organizations/memberships", "GET /api/public/projects/{}/memberships",
  "PUT /api/public/projects/{}/memberships", "DELETE /api/public/projects/{}/memberships",
]);

// Fields Glassbox answers beyond a spec type, each with the reason.
const rowColumns = ["projectId", "createdAt", "updatedAt"];
const observationColumns = [...rowColumns, "promptTokens", "completionTokens", "totalTokens", "unit", "usagePricingTierId", "usagePricingTierName"];
const traceColumns = [...rowColumns, "externalId", "bookmarked"];
const extraFields = {
  // Langfuse's server answers these columns of its rows, beyond its spec;
  // the SDKs of older versions read them.
  TraceWithDetails: traceColumns,
  TraceWithFullDetails: traceColumns,
  ObservationsView: observationColumns,
  ObservationsViewSingle: observationColumns,
  Prompt: [...rowColumns, "id", "createdBy", "isActive"],
  PromptMetaListResponse: ["pagination"],
  // Glassbox's evaluation settings of a connection.
  LlmConnection: ["defaultModel", "defaultParams", "maxConcurrency", "timeoutMs"],
};

const run = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;

async function call(method, path, { query, body } = {}) {
  const url = new URL(base + path);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, typeof v === "string" ? v : JSON.stringify(v));
  const res = await fetch(url, {
    method,
    headers: { Authorization: auth, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

// checkFields compares a value's field names with a spec type: none that
// the type lacks, none that it requires missing; a list's first element and
// its meta are checked against their types too. It returns the problems.
function checkFields(value, type, where) {
  const fields = shape(type);
  if (fields === null || value === null || typeof value !== "object" || Array.isArray(value)) return [];
  const problems = [];
  for (const key of Object.keys(value)) {
    if (!fields[key] && !(extraFields[type] ?? []).includes(key)) problems.push(`${where}: field ${key} is not in ${type}`);
  }
  for (const [key, f] of Object.entries(fields)) {
    if (!f.optional && !(key in value) && key !== "_deprecation") problems.push(`${where}: ${type} requires ${key}`);
  }
  const item = elementType(fields.data?.type);
  if (item && Array.isArray(value.data) && value.data.length > 0) problems.push(...checkFields(value.data[0], item, `${where}.data[0]`));
  if (fields.meta && value.meta) problems.push(...checkFields(value.meta, fields.meta.type, `${where}.meta`));
  return problems;
}

// created asserts a 2xx answer to a setup request.
function created(res) {
  assert.ok(res.status >= 200 && res.status < 300, `${res.status} ${res.text}`);
}

async function eventually(fn, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = await fn();
    if (out) return out;
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("Langfuse's published API against Glassbox", { skip }, () => {
  let served;
  const ids = {};

  before(async () => {
    const doc = await call("GET", "/api/public/openapi.json");
    assert.equal(doc.status, 200);
    served = new Set();
    for (const [path, item] of Object.entries(doc.json.paths)) {
      for (const method of Object.keys(item)) served.add(normalize(`${method.toUpperCase()} ${path}`));
    }
    // The all-in-one's OTLP receiver serves the OTel route on the same base URL.
    served.add("POST /api/public/otel/v1/traces");

    // One object of each kind, so that reads have something to answer.
    const now = new Date().toISOString();
    ids.traceId = randomBytes(16).toString("hex");
    ids.observationId = randomBytes(8).toString("hex");
    ids.sessionId = `ops-session-${run}`;
    ids.scoreId = `ops-score-${run}`;
    const batch = await call("POST", "/api/public/ingestion", {
      body: {
        batch: [
          { id: randomBytes(8).toString("hex"), type: "trace-create", timestamp: now,
            body: { id: ids.traceId, name: "ops", sessionId: ids.sessionId, userId: "ops-user", input: "q", output: "a" } },
          { id: randomBytes(8).toString("hex"), type: "generation-create", timestamp: now,
            body: { id: ids.observationId, traceId: ids.traceId, name: "llm", model: "gpt-4o-mini", startTime: now, endTime: now,
              usageDetails: { input: 10, output: 2 } } },
          { id: randomBytes(8).toString("hex"), type: "score-create", timestamp: now,
            body: { id: ids.scoreId, traceId: ids.traceId, name: "ops-quality", value: 0.5 } },
        ],
      },
    });
    assert.equal(batch.status, 207, batch.text);
    await eventually(async () => (await call("GET", `/api/public/traces/${ids.traceId}`)).status === 200, "the trace is stored");

    ids.promptName = `ops/${run}`;
    ids.name = ids.promptName;
    const prompt = await call("POST", "/api/public/v2/prompts", { body: { name: ids.promptName, type: "text", prompt: "Hi {{x}}", labels: ["production"] } });
    created(prompt);
    ids.version = String(prompt.json.version);
    ids.datasetName = `ops-${run}`;
    const dataset = await call("POST", "/api/public/v2/datasets", { body: { name: ids.datasetName } });
    created(dataset);
    ids.datasetId = dataset.json.id;
    const item = await call("POST", "/api/public/dataset-items", { body: { datasetName: ids.datasetName, input: "q", expectedOutput: "a" } });
    created(item);
    ids.datasetItemId = item.json.id;
    ids.runName = `ops-run-${run}`;
    const runItem = await call("POST", "/api/public/dataset-run-items", { body: { runName: ids.runName, datasetItemId: ids.datasetItemId, traceId: ids.traceId } });
    created(runItem);
    const config = await call("POST", "/api/public/score-configs", { body: { name: `ops-${run}`, dataType: "NUMERIC", minValue: 0, maxValue: 1 } });
    created(config);
    ids.configId = config.json.id;
    const queue = await call("POST", "/api/public/annotation-queues", { body: { name: `ops-${run}`, scoreConfigIds: [ids.configId] } });
    created(queue);
    ids.queueId = queue.json.id;
    const queueItem = await call("POST", `/api/public/annotation-queues/${ids.queueId}/items`, { body: { objectId: ids.traceId, objectType: "TRACE" } });
    created(queueItem);
    ids.itemId = queueItem.json.id;
    const comment = await call("POST", "/api/public/comments", { body: { projectId: "", objectType: "TRACE", objectId: ids.traceId, content: "ops" } });
    created(comment);
    ids.commentId = comment.json.id;
    const model = await call("POST", "/api/public/models", { body: { modelName: `ops-${run}`, matchPattern: `(?i)^ops-${run}$`, unit: "TOKENS", inputPrice: 0.000001 } });
    created(model);
    ids.modelId = model.json.id;
    const dashboard = await call("POST", "/api/public/unstable/dashboards", { body: { name: `ops-${run}`, description: "ops" } });
    created(dashboard);
    ids.dashboardId = dashboard.json?.id;
    const projects = await call("GET", "/api/public/projects");
    ids.projectId = projects.json.data[0].id;
  });

  test("every operation of the spec is served or left out for a stated reason", () => {
    const spec = new Set(operations.map((o) => normalize(o.op)));
    assert.ok(spec.size > 100, `the spec has ${spec.size} operations`);
    const unaccounted = [...spec].filter((op) => !served.has(op) && !leftOut[op]);
    assert.deepEqual(unaccounted, [], "operations neither served nor left out");
    const both = Object.keys(leftOut).filter((op) => served.has(op));
    assert.deepEqual(both, [], "left out but served");
    const stale = Object.keys(leftOut).filter((op) => !spec.has(op));
    assert.deepEqual(stale, [], "left out but no longer in the spec");
    console.log(`spec: ${spec.size} operations; served: ${spec.size - Object.keys(leftOut).length}; left out: ${Object.keys(leftOut).length}`);
  });

  test("left-out operations answer 404 or 405", async () => {
    for (const op of Object.keys(leftOut)) {
      const [method, path] = op.split(" ");
      const res = await call(method, path.replaceAll("{}", "x"), method === "GET" || method === "DELETE" ? {} : { body: {} });
      assert.ok([404, 405].includes(res.status), `${op}: ${res.status} ${res.text}`);
    }
  });

  test("served reads answer 200 with the spec's field names", async () => {
    const query = {
      "GET /api/public/experiments": { fromStartTime: new Date(Date.now() - 3600e3).toISOString() },
      "GET /api/public/experiment-items": { fromStartTime: new Date(Date.now() - 3600e3).toISOString() },
      "GET /api/public/dataset-run-items": () => ({ datasetId: ids.datasetId, runName: ids.runName }),
      "GET /api/public/metrics": { query: { view: "traces", metrics: [{ measure: "count", aggregation: "count" }], fromTimestamp: new Date(Date.now() - 3600e3).toISOString(), toTimestamp: new Date(Date.now() + 60e3).toISOString() } },
      "GET /api/public/v2/metrics": { query: { view: "observations", metrics: [{ measure: "count", aggregation: "count" }], fromTimestamp: new Date(Date.now() - 3600e3).toISOString(), toTimestamp: new Date(Date.now() + 60e3).toISOString() } },
    };
    // Path parameters by name, and by client where a name is ambiguous.
    const param = (o, name) => {
      if (name === "id") return { DatasetItems: ids.datasetItemId, Models: ids.modelId }[o.client];
      if (name === "name") return ids.promptName;
      return ids[name];
    };
    const problems = [];
    let checked = 0;
    for (const o of operations) {
      const op = normalize(o.op);
      if (!o.op.startsWith("GET ") || !served.has(op) || organizationRoutes.has(op)) continue;
      let known = true;
      const path = o.op.slice(4).replace(/\{(\w+)\}/g, (_, name) => {
        const v = param(o, name);
        if (v === undefined) known = false;
        return encodeURIComponent(v ?? "missing");
      });
      if (!known) continue;
      const q = typeof query[op] === "function" ? query[op]() : query[op];
      const res = await call("GET", path, { query: q });
      if (res.status !== 200) {
        problems.push(`${o.op}: ${res.status} ${res.text.slice(0, 200)}`);
        continue;
      }
      problems.push(...checkFields(res.json, o.type, o.op));
      checked++;
    }
    console.log(`read operations checked against their types: ${checked}`);
    assert.deepEqual(problems, []);
    assert.ok(checked >= 40, `checked ${checked}`);
  });

  test("served writes and reads of unknown objects answer 4xx with a message, never a missing route", async () => {
    const problems = [];
    for (const o of operations) {
      const op = normalize(o.op);
      if (!served.has(op) || op === "POST /api/public/otel/v1/traces") continue;
      const [method] = o.op.split(" ");
      const path = o.op.slice(method.length + 1).replace(/\{(\w+)\}/g, () => `missing-${run}`);
      const res = await call(method, path, method === "GET" || method === "DELETE" ? {} : { body: {} });
      const expected = organizationRoutes.has(op) ? [403] : [400, 404];
      if (!expected.includes(res.status) && !(method === "GET" && res.status === 200 && !o.op.includes("{"))) {
        problems.push(`${o.op}: ${res.status} ${res.text.slice(0, 160)}`);
      } else if (res.status >= 400 && (typeof res.json?.message !== "string" || res.json.message === "Route not found")) {
        problems.push(`${o.op}: ${res.status} without a message about the request: ${res.text.slice(0, 160)}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
