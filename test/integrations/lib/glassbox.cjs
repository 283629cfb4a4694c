// What every integration test shares: an OpenTelemetry tracer provider that
// exports to Glassbox over OTLP/HTTP (protobuf or JSON) with a project key,
// exactly as an application would configure it, and reads of what Glassbox
// stored, through its REST API.
//
//   GLASSBOX_URL=... GLASSBOX_PUBLIC_KEY=... GLASSBOX_SECRET_KEY=... node --test
//
// Without the GLASSBOX_* variables the tests are skipped, unless CI=true,
// where that is an error.
"use strict";
const assert = require("node:assert/strict");
const { trace, context } = require("@opentelemetry/api");
const { NodeTracerProvider } = require("@opentelemetry/sdk-trace-node");
const { SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-base");

const missing = ["GLASSBOX_URL", "GLASSBOX_PUBLIC_KEY", "GLASSBOX_SECRET_KEY"].filter((k) => !process.env[k]);
if (missing.length > 0 && process.env.CI === "true") {
  throw new Error(`${missing.join(", ")} must be set when CI=true`);
}
const skip = missing.length > 0 ? `${missing.join(", ")} not set; start Glassbox and export them` : false;

const baseURL = process.env.GLASSBOX_URL;
const authorization = "Basic " + Buffer.from(`${process.env.GLASSBOX_PUBLIC_KEY}:${process.env.GLASSBOX_SECRET_KEY}`).toString("base64");

// startTracing registers a global tracer provider exporting every span at
// once over OTLP/HTTP with protocol "protobuf" or "json".
function startTracing(protocol) {
  const { OTLPTraceExporter } =
    protocol === "json" ? require("@opentelemetry/exporter-trace-otlp-http") : require("@opentelemetry/exporter-trace-otlp-proto");
  const exporter = new OTLPTraceExporter({ url: `${baseURL}/api/public/otel/v1/traces`, headers: { Authorization: authorization } });
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  return provider;
}

// traced runs fn inside a root span named name and resolves to the trace id
// and fn's result, once every span is exported.
async function traced(provider, name, fn) {
  const tracer = trace.getTracer("glassbox-integration-tests");
  const root = tracer.startSpan(name);
  let result;
  try {
    result = await context.with(trace.setSpan(context.active(), root), fn);
  } catch (err) {
    result = err;
  } finally {
    root.end();
  }
  await provider.forceFlush();
  return { traceId: root.spanContext().traceId, result };
}

// storedTrace polls until the trace has at least count observations and
// returns it, observations sorted by start time.
async function storedTrace(traceId, count, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    const res = await fetch(`${baseURL}/api/public/traces/${traceId}`, { headers: { Authorization: authorization } });
    if (res.status === 200) {
      last = await res.json();
      if (last.observations.length >= count) {
        last.observations.sort((a, b) => a.startTime.localeCompare(b.startTime));
        return last;
      }
    }
    if (Date.now() > deadline) {
      assert.fail(`trace ${traceId} has ${last?.observations.length ?? 0} observations after ${timeoutMs} ms, want ${count}: ${JSON.stringify(last?.observations.map((o) => [o.type, o.name]))}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

// only returns the one observation of the trace matching pred.
function only(trace, pred, what) {
  const found = trace.observations.filter(pred);
  assert.equal(found.length, 1, `${what}: ${JSON.stringify(trace.observations.map((o) => [o.type, o.name, o.model]))}`);
  return found[0];
}

// childOf says whether o hangs below parent in the trace's tree.
function childOf(trace, o, parent) {
  const byId = Object.fromEntries(trace.observations.map((x) => [x.id, x]));
  for (let p = byId[o.parentObservationId]; p; p = byId[p.parentObservationId]) {
    if (p.id === parent.id) return true;
  }
  return false;
}

// assertOnlyTheRoot checks that the library exported nothing below the
// test's own span: a library version that starts to fails here, and its
// expectations are then updated.
async function assertOnlyTheRoot(traceId) {
  await storedTrace(traceId, 1);
  await new Promise((r) => setTimeout(r, 1000));
  const again = await storedTrace(traceId, 1);
  assert.equal(again.observations.length, 1, JSON.stringify(again.observations.map((o) => [o.type, o.name])));
}

module.exports = { skip, startTracing, traced, storedTrace, only, childOf, assertOnlyTheRoot };
