// Glassbox's MCP endpoint (/api/public/mcp) through the official MCP
// TypeScript SDK's client and Streamable HTTP transport, authenticated with
// the project's key pair:
//
//   LANGFUSE_BASE_URL=... LANGFUSE_PUBLIC_KEY=... LANGFUSE_SECRET_KEY=... node --test mcp.test.mjs
//
// Without the LANGFUSE_* variables the tests are skipped, unless CI=true,
// where that is an error.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LangfuseClient } from "@langfuse/client";

import { emitTraces } from "./lib/emit.mjs";

const missing = ["LANGFUSE_BASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"].filter((k) => !process.env[k]);
if (missing.length > 0 && process.env.CI === "true") {
  throw new Error(`${missing.join(", ")} must be set when CI=true`);
}
const skip = missing.length > 0 ? `${missing.join(", ")} not set; start Glassbox and export them` : false;

const run = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;

function connect(secretKey = process.env.LANGFUSE_SECRET_KEY) {
  const auth = Buffer.from(`${process.env.LANGFUSE_PUBLIC_KEY}:${secretKey}`).toString("base64");
  const transport = new StreamableHTTPClientTransport(new URL("/api/public/mcp", process.env.LANGFUSE_BASE_URL), {
    requestInit: { headers: { Authorization: `Basic ${auth}` } },
  });
  const client = new Client({ name: "glassbox-sdk-tests", version: "1.0.0" });
  return { client, transport, ready: client.connect(transport) };
}

// call runs a tool and returns its structured result, failing on a tool error.
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.notEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, "text");
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent, "the text is the structured content's JSON");
  return result.structuredContent;
}

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

describe("Glassbox MCP server through the MCP SDK", { skip }, () => {
  let client;
  let transport;
  let emitted;
  const promptName = `mcp-tests/${run}/summarize`;

  before(async () => {
    emitted = await emitTraces({ count: 2, runTag: `mcp-${run}` });
    const langfuse = new LangfuseClient();
    await langfuse.prompt.create({ name: promptName, type: "text", prompt: "Summarize {{text}}.", labels: ["production"] });
    await langfuse.prompt.create({ name: promptName, type: "text", prompt: "Summarize {{text}} in one line.", labels: ["staging"] });
    let ready;
    ({ client, transport, ready } = connect());
    await ready;
  });

  after(async () => {
    await transport?.terminateSession();
    await client?.close();
  });

  test("initialize negotiates a version and opens a session", async () => {
    assert.deepEqual(client.getServerVersion()?.name, "glassbox");
    assert.ok(client.getServerCapabilities()?.tools, "the tools capability");
    assert.ok(transport.sessionId, "an Mcp-Session-Id");
    assert.equal(transport.protocolVersion, "2025-06-18", "the newest version both sides speak");
    assert.deepEqual(await client.ping(), {});
  });

  test("tools/list describes every tool with an input schema", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ["get_prompt", "get_trace", "list_observations", "list_prompts", "list_traces", "query_metrics"]);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object", t.name);
      assert.ok(t.description, t.name);
      assert.equal(t.annotations?.readOnlyHint, true, t.name);
    }
    const traces = tools.find((t) => t.name === "list_traces");
    assert.equal(traces.inputSchema.properties.filter.type, "array");
  });

  test("list_prompts and get_prompt by label and version", async () => {
    const list = await call(client, "list_prompts", { name: promptName });
    assert.equal(list.data.length, 1);
    assert.deepEqual(list.data[0].versions, [1, 2]);

    const production = await call(client, "get_prompt", { name: promptName });
    assert.equal(production.version, 1);
    assert.equal(production.prompt, "Summarize {{text}}.");
    const staging = await call(client, "get_prompt", { name: promptName, label: "staging" });
    assert.equal(staging.version, 2);
    const second = await call(client, "get_prompt", { name: promptName, version: 2, resolve: false });
    assert.equal(second.prompt, "Summarize {{text}} in one line.");

    const missingPrompt = await client.callTool({ name: "get_prompt", arguments: { name: `${promptName}-missing` } });
    assert.equal(missingPrompt.isError, true);
    assert.match(missingPrompt.content[0].text, /not found/i);
  });

  test("list_traces with a structured filter, get_trace and list_observations", async () => {
    const filter = [{ type: "arrayOptions", column: "tags", operator: "any of", value: [emitted.runTag] }];
    const listed = await eventually(async () => {
      const page = await call(client, "list_traces", { filter, fields: "core,metrics", limit: 10 });
      assert.equal(page.data.length, emitted.traces.length);
      return page;
    });
    assert.deepEqual(listed.data.map((t) => t.id).sort(), emitted.traces.map((t) => t.traceId).sort());
    assert.equal(listed.data[0].input, undefined, "fields left the inputs out");

    const sent = emitted.traces[0];
    const trace = await eventually(async () => {
      const t = await call(client, "get_trace", { traceId: sent.traceId });
      assert.equal(t.observations.length, 4);
      return t;
    });
    assert.equal(trace.id, sent.traceId);
    assert.equal(trace.userId, sent.userId);
    assert.deepEqual(trace.observations.map((o) => o.name).sort(), ["agent-run", "llm-call", "parse-results", "search-tool"]);

    const generations = await call(client, "list_observations", { traceId: sent.traceId, type: "GENERATION", fields: "core,basic,model,usage" });
    assert.equal(generations.data.length, 1);
    assert.equal(generations.data[0].name, "llm-call");

    const unknown = await client.callTool({ name: "get_trace", arguments: { traceId: "0".repeat(32) } });
    assert.equal(unknown.isError, true);
  });

  test("query_metrics runs a v2 metrics query", async () => {
    const now = new Date();
    const query = {
      view: "observations",
      dimensions: [{ field: "name" }],
      metrics: [{ measure: "count", aggregation: "count" }, { measure: "totalCost", aggregation: "sum" }],
      filters: [{ type: "arrayOptions", column: "tags", operator: "any of", value: [emitted.runTag] }],
      fromTimestamp: new Date(now.getTime() - 3600_000).toISOString(),
      toTimestamp: new Date(now.getTime() + 3600_000).toISOString(),
    };
    const result = await eventually(async () => {
      const r = await call(client, "query_metrics", query);
      assert.equal(r.data.length, 4);
      return r;
    });
    const byName = Object.fromEntries(result.data.map((row) => [row.name, row]));
    assert.equal(Number(byName["llm-call"].count_count), emitted.traces.length);
    assert.ok(Math.abs(byName["llm-call"].sum_totalCost - 0.00019 * emitted.traces.length) < 1e-9);
  });

  test("bad arguments are protocol errors; a wrong key is refused", async () => {
    await assert.rejects(client.callTool({ name: "list_traces", arguments: { limit: "ten" } }), /limit must be an integer/);
    await assert.rejects(client.callTool({ name: "drop_tables", arguments: {} }), /Unknown tool/);

    const wrong = connect("sk-lf-wrong");
    await assert.rejects(wrong.ready, /401|Invalid credentials/);
  });
});
