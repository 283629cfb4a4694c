// The suite every OpenAI instrumentation runs: a chat completion, a streamed
// one, a tool call, an embedding and a failing call through the official
// openai client against the fake provider, each read back from Glassbox.
// What a library does not record is stated in its expectations, so a new
// version that records more or less fails here.
"use strict";
const { after, before, describe, test } = require("node:test");
const assert = require("node:assert/strict");
const { metrics } = require("@opentelemetry/api");
const glassbox = require("./glassbox.cjs");
const fake = require("./fake-provider.cjs");

const { skip, startTracing, traced, storedTrace, only, assertOnlyTheRoot } = glassbox;

// expect:
//   usage: "detailed" (cached and reasoning tokens split out, as Langfuse
//     does), "plain" (input, output, total) for non-streamed calls
//   streamUsage: true when the library reads the usage of a stream; else the
//     usage is estimated from the text
//   content: "request" (the request and response bodies), "messages" (GenAI
//     message parts) or "none"
//   embeddings: whether the library traces embeddings, and embeddingUsage
//   errors: whether a failed call is exported
function openAISuite(name, { protocol, instrumentation, expect }) {
  describe(name, { skip }, () => {
    let provider;
    let server;
    let client;
    before(async () => {
      provider = startTracing(protocol);
      const inst = instrumentation();
      inst.setTracerProvider(provider);
      // Instruments made before the subclass's fields are set are lost.
      inst.setMeterProvider(metrics.getMeterProvider());
      const OpenAI = require("openai"); // after the instrumentation's require hook
      if (inst.manuallyInstrument && expect.manual) inst.manuallyInstrument(OpenAI);
      server = await fake.startFakeProvider();
      client = new OpenAI.OpenAI({ baseURL: server.url + "/v1", apiKey: "sk-fake", maxRetries: 0 });
    });
    after(async () => {
      await provider?.shutdown();
      await server?.close();
    });
    const generation = (trace) => only(trace, (o) => o.type === "GENERATION", "one generation");
    const withContent = expect.content !== "none";

    test("chat completion: model, parameters, usage, cost, messages", async () => {
      const { traceId } = await traced(provider, "chat", () =>
        client.chat.completions.create({
          model: "gpt-4o-mini",
          temperature: 0.3,
          messages: [
            { role: "system", content: "Be brief." },
            { role: "user", content: "What is OTLP?" },
          ],
        }),
      );
      const gen = generation(await storedTrace(traceId, 2));
      assert.equal(gen.model, "gpt-4o-mini");
      assert.equal(gen.modelParameters?.temperature, 0.3, JSON.stringify(gen.modelParameters));
      const { input, output, cachedInput, reasoning } = fake.usage;
      const want =
        expect.usage === "detailed"
          ? { input: input - cachedInput, input_cached_tokens: cachedInput, output: output - reasoning, output_reasoning_tokens: reasoning, total: input + output }
          : { input, output, total: input + output };
      assert.deepEqual(gen.usageDetails, want);
      assert.ok(gen.costDetails.total > 0, `priced: ${JSON.stringify(gen.costDetails)}`);
      const shown = JSON.stringify(gen.input ?? null) + JSON.stringify(gen.output ?? null);
      if (withContent) {
        assert.match(JSON.stringify(gen.input), /What is OTLP\?/);
        assert.match(JSON.stringify(gen.input), /Be brief\./);
        assert.match(JSON.stringify(gen.output), /You said: What is OTLP\?/);
      } else {
        assert.doesNotMatch(shown, /OTLP/, "no message content is stored");
      }
      if (expect.content === "messages") {
        assert.equal(gen.input[gen.input.length - 1].role, "user");
        assert.equal(gen.output[0].role, "assistant");
      }
    });

    test("streamed chat completion", async () => {
      const { traceId } = await traced(provider, "stream", async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-4o-mini",
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "Stream this please" }],
        });
        let text = "";
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
        return text;
      });
      const gen = generation(await storedTrace(traceId, 2));
      assert.equal(gen.model, "gpt-4o-mini");
      if (withContent) assert.match(JSON.stringify(gen.output), /You said: Stream this please/);
      if (expect.streamUsage) {
        assert.equal(gen.usageDetails.output, fake.usage.output);
      } else {
        assert.ok(gen.usageDetails.output > 0, "estimated from the text when the library leaves it out");
      }
      assert.ok(gen.costDetails.total > 0);
    });

    test("tool call: the requested call in the output", async () => {
      const tools = [{ type: "function", function: { name: "weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
      const { traceId } = await traced(provider, "tools", () =>
        client.chat.completions.create({ model: "gpt-4o-mini", tools, messages: [{ role: "user", content: "Weather in Paris?" }] }),
      );
      const gen = generation(await storedTrace(traceId, 2));
      assert.match(JSON.stringify(gen.metadata), /tool_call/, "the finish reason says a tool was called");
      if (withContent) {
        assert.match(JSON.stringify(gen.output), /weather/);
        assert.match(JSON.stringify(gen.output), /Paris/);
      }
    });

    test(expect.embeddings ? "embedding: model, usage and cost" : "embedding: not traced by the library", async () => {
      const { traceId } = await traced(provider, "embed", () => client.embeddings.create({ model: "text-embedding-3-small", input: "sunny day in Paris" }));
      if (!expect.embeddings) return assertOnlyTheRoot(traceId);
      const emb = only(await storedTrace(traceId, 2), (o) => o.type === "EMBEDDING", "one embedding");
      assert.equal(emb.model, "text-embedding-3-small");
      if (expect.embeddingUsage) assert.equal(emb.usageDetails.input, fake.embeddingTokens);
      else assert.ok(emb.usageDetails.input > 0, "estimated from the text when the library leaves it out");
      assert.ok(emb.costDetails.total > 0, `priced: ${JSON.stringify(emb.costDetails)}`);
    });

    const failure = expect.errors
      ? "a failed call is an ERROR with the provider's message"
      : "a failed call is not exported (the library never ends the span of a rejected call)";
    test(failure, async () => {
      const { traceId, result } = await traced(provider, "fail", () =>
        client.chat.completions.create({ model: "fail-model", messages: [{ role: "user", content: "hello" }] }),
      );
      assert.ok(result instanceof Error);
      if (!expect.errors) return assertOnlyTheRoot(traceId);
      const failed = only(await storedTrace(traceId, 2), (o) => o.level === "ERROR", "one failed observation");
      assert.match(failed.statusMessage ?? "", /fail-model/);
      assert.equal(failed.model, "fail-model");
    });
  });
}

module.exports = { openAISuite };
