// The Vercel AI SDK with its OpenTelemetry integration (@ai-sdk/otel),
// exporting OTLP protobuf: text, streamed text, tool calls, embeddings and a
// failed call, each read back from Glassbox.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { embed, generateText, jsonSchema, registerTelemetry, stepCountIs, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { OpenTelemetry } from "@ai-sdk/otel";
import glassbox from "./lib/glassbox.cjs";
import fake from "./lib/fake-provider.cjs";

const { skip, startTracing, traced, storedTrace, only, childOf } = glassbox;

describe("Vercel AI SDK with @ai-sdk/otel", { skip }, () => {
  let provider;
  let server;
  let openai;

  before(async () => {
    provider = startTracing("protobuf");
    registerTelemetry(new OpenTelemetry());
    server = await fake.startFakeProvider();
    openai = createOpenAI({ baseURL: server.url + "/v1", apiKey: "sk-fake" });
  });
  after(async () => {
    await provider?.shutdown();
    await server?.close();
  });

  const telemetry = { isEnabled: true, functionId: "support-bot" };
  const isGeneration = (o) => o.type === "GENERATION";

  test("generateText: one generation with model, parameters, usage, cost, messages", async () => {
    const { traceId } = await traced(provider, "ai-sdk-text", () =>
      generateText({ model: openai.chat("gpt-4o-mini"), system: "Be brief.", prompt: "What is OTLP?", temperature: 0.3, maxOutputTokens: 64, telemetry }),
    );
    const trace = await storedTrace(traceId, 2);
    const gen = only(trace, isGeneration, "one generation");
    assert.equal(gen.model, "gpt-4o-mini");
    // Langfuse's convention: input counts the uncached prompt tokens.
    assert.deepEqual(gen.usageDetails, {
      input: fake.usage.input - fake.usage.cachedInput,
      input_cached_tokens: fake.usage.cachedInput,
      output: fake.usage.output,
      total: fake.usage.input + fake.usage.output,
    });
    assert.ok(gen.costDetails.input_cached_tokens > 0 && gen.costDetails.total > 0, `priced: ${JSON.stringify(gen.costDetails)}`);
    assert.equal(gen.modelParameters.temperature, 0.3);
    assert.match(JSON.stringify(gen.input), /What is OTLP\?/);
    assert.match(JSON.stringify(gen.input), /Be brief\./);
    assert.match(JSON.stringify(gen.output), /You said: What is OTLP\?/);
    const root = only(trace, (o) => o.name === "ai-sdk-text", "the test's root span");
    assert.ok(childOf(trace, gen, root), "the generation hangs below the caller's span");
  });

  test("streamText: the streamed answer, with time to first token", async () => {
    const { traceId } = await traced(provider, "ai-sdk-stream", async () => {
      const result = streamText({ model: openai.chat("gpt-4o-mini"), prompt: "Stream this please", telemetry });
      let text = "";
      for await (const part of result.textStream) text += part;
      return text;
    });
    const trace = await storedTrace(traceId, 2);
    const gen = only(trace, isGeneration, "one generation");
    assert.match(JSON.stringify(gen.output), /You said: Stream this please/);
    assert.equal(gen.usageDetails.output, fake.usage.output);
    assert.ok(gen.completionStartTime, "completion start time of the stream");
  });

  test("tool calls: the call, the tool's execution with arguments and result, the final answer", async () => {
    const weather = tool({
      description: "Weather of a city",
      inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
      execute: async ({ city }) => ({ city, forecast: "sunny" }),
    });
    const { traceId } = await traced(provider, "ai-sdk-tools", () =>
      generateText({ model: openai.chat("gpt-4o-mini"), prompt: "Weather in Paris?", tools: { weather }, stopWhen: stepCountIs(3), telemetry }),
    );
    const trace = await storedTrace(traceId, 4);
    const gens = trace.observations.filter(isGeneration);
    assert.equal(gens.length, 2, "a generation calling the tool, then one answering");
    assert.match(JSON.stringify(gens[0].output), /weather/);
    assert.match(JSON.stringify(gens[0].output), /Paris/);
    const call = only(trace, (o) => o.type === "TOOL", "one tool execution");
    assert.match(call.name, /weather/);
    assert.deepEqual(typeof call.input === "string" ? JSON.parse(call.input) : call.input, fake.toolArguments);
    assert.match(JSON.stringify(call.output), /sunny/);
    assert.match(JSON.stringify(gens[1].output), /It is sunny in Paris/);
  });

  // embed() and the model call below it are both "embeddings" operations;
  // only the model call reports usage, so the cost is counted once. The
  // embedded text is not exported by the library.
  test("embed: an embedding with its model, usage and cost", async () => {
    const { traceId } = await traced(provider, "ai-sdk-embed", () =>
      embed({ model: openai.embedding("text-embedding-3-small"), value: "sunny day in Paris", telemetry }),
    );
    const trace = await storedTrace(traceId, 3);
    const embeddings = trace.observations.filter((o) => o.type === "EMBEDDING");
    assert.equal(embeddings.length, 2);
    assert.ok(embeddings.every((o) => o.model === "text-embedding-3-small"));
    const call = only(trace, (o) => o.type === "EMBEDDING" && o.usageDetails.input, "one model call with usage");
    assert.deepEqual(call.usageDetails, { input: fake.embeddingTokens, total: fake.embeddingTokens });
    assert.ok(call.costDetails.total > 0);
  });

  test("a failed call is an ERROR with the provider's message", async () => {
    const { traceId, result } = await traced(provider, "ai-sdk-error", () =>
      generateText({ model: openai.chat("fail-model"), prompt: "hello", maxRetries: 0, telemetry }),
    );
    assert.ok(result instanceof Error);
    const trace = await storedTrace(traceId, 2);
    const failed = trace.observations.filter((o) => o.level === "ERROR");
    assert.ok(failed.length >= 1, JSON.stringify(trace.observations.map((o) => [o.type, o.name, o.level])));
    assert.ok(failed.some((o) => /fail-model/.test(o.statusMessage)), JSON.stringify(failed.map((o) => o.statusMessage)));
  });
});
