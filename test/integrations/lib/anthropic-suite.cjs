// The suite an Anthropic integration runs: a message, a streamed one, a tool
// use and a failing call through the official @anthropic-ai/sdk client
// against the fake provider, each read back from Glassbox.
"use strict";
const { after, before, describe, test } = require("node:test");
const assert = require("node:assert/strict");
const glassbox = require("./glassbox.cjs");
const fake = require("./fake-provider.cjs");

const { skip, startTracing, traced, storedTrace, only } = glassbox;

// The model the calls name: priced in Glassbox's built-in price list.
const model = "claude-sonnet-4-5";

// setup(provider) returns the client; expect says what the integration
// records: streamOutput (the streamed text), requestParameters (temperature
// among the model parameters), failureMessage (the provider's message on an
// ERROR observation).
function anthropicSuite(name, { protocol, setup, expect }) {
  describe(name, { skip }, () => {
    let provider;
    let server;
    let client;
    before(async () => {
      provider = startTracing(protocol);
      server = await fake.startFakeProvider();
      client = setup(provider, server.url);
    });
    after(async () => {
      await provider?.shutdown();
      await server?.close();
    });
    const generation = (trace) => only(trace, (o) => o.type === "GENERATION", "one generation");

    test("message: model, usage with cache reads, cost, messages", async () => {
      const { traceId } = await traced(provider, "message", () =>
        client.messages.create({ model, max_tokens: 64, temperature: 0.3, system: "Be brief.", messages: [{ role: "user", content: "What is OTLP?" }] }),
      );
      const gen = generation(await storedTrace(traceId, 2));
      assert.equal(gen.model, model);
      assert.equal(gen.modelParameters.max_tokens, 64);
      if (expect.requestParameters) assert.equal(gen.modelParameters.temperature, 0.3);
      // Anthropic's input_tokens leave the cache reads out; both integrations
      // add them, and Glassbox splits them out again.
      const { input, output, cachedInput } = fake.usage;
      assert.equal(gen.usageDetails.input, input);
      assert.equal(gen.usageDetails.input_cached_tokens, cachedInput);
      assert.equal(gen.usageDetails.output, output);
      assert.equal(gen.usageDetails.total, input + cachedInput + output);
      assert.ok(gen.costDetails.input_cached_tokens > 0 && gen.costDetails.total > 0, `priced: ${JSON.stringify(gen.costDetails)}`);
      assert.match(JSON.stringify(gen.input), /What is OTLP\?/);
      assert.match(JSON.stringify(gen.input), /Be brief\./);
      assert.match(JSON.stringify(gen.output), /You said: What is OTLP\?/);
    });

    test("streamed message", async () => {
      const { traceId } = await traced(provider, "stream", async () => {
        const stream = await client.messages.create({ model, max_tokens: 64, stream: true, messages: [{ role: "user", content: "Stream this please" }] });
        for await (const _ of stream);
      });
      const gen = generation(await storedTrace(traceId, 2));
      assert.equal(gen.model, model);
      assert.equal(gen.usageDetails.output, fake.usage.output);
      assert.match(JSON.stringify(gen.input), /Stream this please/);
      if (expect.streamOutput) assert.match(JSON.stringify(gen.output), /You said: Stream this please/);
      else assert.equal(gen.output, null, "the library leaves the streamed text out");
    });

    test("tool use: the call with its arguments in the output", async () => {
      const tools = [{ name: "weather", description: "Weather of a city", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
      const { traceId } = await traced(provider, "tools", () =>
        client.messages.create({ model, max_tokens: 64, tools, messages: [{ role: "user", content: "Weather in Paris?" }] }),
      );
      const gen = generation(await storedTrace(traceId, 2));
      assert.match(JSON.stringify(gen.output), /weather/);
      assert.match(JSON.stringify(gen.output), /Paris/);
    });

    test("a failed call is an ERROR with the provider's message", async () => {
      const { traceId, result } = await traced(provider, "fail", () =>
        client.messages.create({ model: "fail-model", max_tokens: 64, messages: [{ role: "user", content: "hello" }] }),
      );
      assert.ok(result instanceof Error);
      const failed = only(await storedTrace(traceId, 2), (o) => o.level === "ERROR", "one failed observation");
      assert.match(failed.statusMessage ?? "", expect.failureMessage);
    });
  });
}

module.exports = { anthropicSuite };
