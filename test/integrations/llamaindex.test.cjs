// LlamaIndex TS through OpenLLMetry's LlamaIndex instrumentation, exporting
// OTLP protobuf: a chat call, a completion, and a query engine over a vector
// index (workflow, retrieval, synthesis, generation).
"use strict";
const { after, before, describe, test } = require("node:test");
const assert = require("node:assert/strict");
const { LlamaIndexInstrumentation } = require("@traceloop/instrumentation-llamaindex");
const glassbox = require("./lib/glassbox.cjs");
const fake = require("./lib/fake-provider.cjs");

const { skip, startTracing, traced, storedTrace, only, childOf } = glassbox;

describe("LlamaIndex TS with OpenLLMetry", { skip }, () => {
  let provider;
  let server;
  let llamaindex;
  let llm;
  before(async () => {
    provider = startTracing("protobuf");
    new LlamaIndexInstrumentation().setTracerProvider(provider);
    llamaindex = require("llamaindex"); // after the instrumentation's require hook
    const { OpenAI, OpenAIEmbedding } = require("@llamaindex/openai");
    server = await fake.startFakeProvider();
    const session = { baseURL: server.url + "/v1", maxRetries: 0 };
    llm = new OpenAI({ model: "gpt-4o-mini", temperature: 0.3, apiKey: "sk-fake", additionalSessionOptions: session });
    llamaindex.Settings.llm = llm;
    llamaindex.Settings.embedModel = new OpenAIEmbedding({ model: "text-embedding-3-small", apiKey: "sk-fake", additionalSessionOptions: session });
  });
  after(async () => {
    await provider?.shutdown();
    await server?.close();
  });

  const checkGeneration = (gen, question) => {
    assert.equal(gen.model, "gpt-4o-mini");
    assert.equal(gen.modelParameters.temperature, 0.3);
    assert.deepEqual(gen.usageDetails, { input: fake.usage.input, output: fake.usage.output, total: fake.usage.input + fake.usage.output });
    assert.ok(gen.costDetails.total > 0);
    assert.match(JSON.stringify(gen.input), question);
    assert.equal(gen.output[0].role, "assistant");
  };

  test("chat and complete: a generation each", async () => {
    for (const [name, call] of [
      ["chat", () => llm.chat({ messages: [{ role: "user", content: "What is OTLP?" }] })],
      ["complete", () => llm.complete({ prompt: "Say hello" })],
    ]) {
      const { traceId } = await traced(provider, name, call);
      checkGeneration(only(await storedTrace(traceId, 2), (o) => o.type === "GENERATION", name), name === "chat" ? /What is OTLP\?/ : /Say hello/);
    }
  });

  test("a query engine: the workflow as a chain, its retrieval and synthesis, the generation with the retrieved context", async () => {
    const { traceId, result } = await traced(provider, "query", async () => {
      const index = await llamaindex.VectorStoreIndex.fromDocuments([new llamaindex.Document({ text: "Paris is sunny today." })]);
      return index.asQueryEngine().query({ query: "Weather in Paris?" });
    });
    assert.ok(!(result instanceof Error), String(result));
    const trace = await storedTrace(traceId, 6);
    const workflow = only(trace, (o) => o.name === "retriever_query_engine.query", "the query workflow");
    assert.equal(workflow.type, "CHAIN");
    assert.match(JSON.stringify(workflow.input), /Weather in Paris\?/);
    const retrieval = only(trace, (o) => o.name === "vector_index_retriever.retrieve", "the retrieval");
    assert.ok(childOf(trace, retrieval, workflow));
    assert.match(JSON.stringify(retrieval.output), /Paris is sunny today/);
    const gen = only(trace, (o) => o.type === "GENERATION", "one generation");
    assert.ok(childOf(trace, gen, workflow));
    checkGeneration(gen, /Paris is sunny today/);
  });
});
