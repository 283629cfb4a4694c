// LangChain JS through OpenInference's LangChain instrumentation, exporting
// OTLP/JSON: a chain (prompt, chat model, parser), a tool, a retriever, a
// model asked to call a tool, and embeddings.
"use strict";
const { after, before, describe, test } = require("node:test");
const assert = require("node:assert/strict");
const { LangChainInstrumentation } = require("@arizeai/openinference-instrumentation-langchain");
const CallbackManagerModule = require("@langchain/core/callbacks/manager");
const { ChatOpenAI, OpenAIEmbeddings } = require("@langchain/openai");
const { ChatPromptTemplate } = require("@langchain/core/prompts");
const { StringOutputParser } = require("@langchain/core/output_parsers");
const { tool } = require("@langchain/core/tools");
const { BaseRetriever } = require("@langchain/core/retrievers");
const { Document } = require("@langchain/core/documents");
const glassbox = require("./lib/glassbox.cjs");
const fake = require("./lib/fake-provider.cjs");

const { skip, startTracing, traced, storedTrace, only, childOf, assertOnlyTheRoot } = glassbox;

class WeatherDocs extends BaseRetriever {
  lc_namespace = ["glassbox", "tests"];
  async _getRelevantDocuments() {
    return [new Document({ pageContent: "Paris is sunny today", metadata: { source: "weather.txt" } })];
  }
}

describe("LangChain JS with OpenInference", { skip }, () => {
  let provider;
  let server;
  let clientOptions;
  let llm;
  before(async () => {
    provider = startTracing("json");
    const instrumentation = new LangChainInstrumentation();
    instrumentation.setTracerProvider(provider);
    instrumentation.manuallyInstrument(CallbackManagerModule);
    server = await fake.startFakeProvider();
    clientOptions = { configuration: { baseURL: server.url + "/v1" }, apiKey: "sk-fake", maxRetries: 0 };
    llm = new ChatOpenAI({ model: "gpt-4o-mini", temperature: 0.3, ...clientOptions });
  });
  after(async () => {
    await provider?.shutdown();
    await server?.close();
  });

  test("a chain: the chain, its prompt, a generation below it, the parser", async () => {
    const chain = ChatPromptTemplate.fromMessages([["system", "Be brief."], ["human", "{question}"]]).pipe(llm).pipe(new StringOutputParser());
    const { traceId, result } = await traced(provider, "chain", () => chain.invoke({ question: "What is OTLP?" }));
    assert.equal(result, "You said: What is OTLP?");
    const trace = await storedTrace(traceId, 5);
    const sequence = only(trace, (o) => o.name === "RunnableSequence", "the chain");
    assert.equal(sequence.type, "CHAIN");
    assert.match(JSON.stringify(sequence.input), /What is OTLP\?/);
    assert.match(JSON.stringify(sequence.output), /You said: What is OTLP\?/);
    const gen = only(trace, (o) => o.type === "GENERATION", "one generation");
    assert.equal(gen.name, "ChatOpenAI");
    assert.ok(childOf(trace, gen, sequence));
    assert.equal(gen.model, "gpt-4o-mini");
    assert.equal(gen.modelParameters.temperature, 0.3);
    const { input, output, cachedInput, reasoning } = fake.usage;
    assert.deepEqual(gen.usageDetails, { input: input - cachedInput, input_cached_tokens: cachedInput, output: output - reasoning, output_reasoning_tokens: reasoning, total: input + output });
    assert.ok(gen.costDetails.total > 0);
    assert.match(JSON.stringify(gen.input), /Be brief\./);
    assert.match(JSON.stringify(gen.output), /You said: What is OTLP\?/);
    assert.equal(only(trace, (o) => o.name === "StrOutputParser", "the parser").type, "CHAIN");
  });

  test("a tool: its input and result", async () => {
    const weather = tool(async ({ city }) => `sunny in ${city}`, {
      name: "weather",
      description: "Weather of a city",
      schema: { type: "object", properties: { city: { type: "string" } } },
    });
    const { traceId } = await traced(provider, "tool", () => weather.invoke({ city: "Paris" }));
    const call = only(await storedTrace(traceId, 2), (o) => o.type === "TOOL", "one tool");
    assert.equal(call.name, "weather");
    assert.match(JSON.stringify(call.input), /Paris/);
    assert.match(JSON.stringify(call.output), /sunny in Paris/);
  });

  test("a retriever: the query and the documents", async () => {
    const { traceId } = await traced(provider, "retriever", () => new WeatherDocs().invoke("weather in Paris"));
    const retrieval = only(await storedTrace(traceId, 2), (o) => o.type === "RETRIEVER", "one retriever");
    assert.match(JSON.stringify(retrieval.input), /weather in Paris/);
    assert.match(JSON.stringify(retrieval.output), /Paris is sunny today/);
  });

  test("a model asked to call a tool: the call in the output, the tools among the parameters", async () => {
    const tools = [{ type: "function", function: { name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const { traceId } = await traced(provider, "tool-call", () => llm.bindTools(tools).invoke("Weather in Paris?"));
    const gen = only(await storedTrace(traceId, 2), (o) => o.type === "GENERATION", "one generation");
    assert.match(JSON.stringify(gen.output), /weather/);
    assert.match(JSON.stringify(gen.output), /Paris/);
    assert.match(JSON.stringify(gen.modelParameters), /weather/);
  });

  test("embeddings are not traced (LangChain's callbacks do not cover them)", async () => {
    const embeddings = new OpenAIEmbeddings({ model: "text-embedding-3-small", ...clientOptions });
    const { traceId } = await traced(provider, "embeddings", () => embeddings.embedQuery("sunny"));
    await assertOnlyTheRoot(traceId);
  });
});
