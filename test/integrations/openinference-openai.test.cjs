// OpenInference's OpenAI instrumentation, exporting OTLP/JSON.
"use strict";
const { OpenAIInstrumentation } = require("@arizeai/openinference-instrumentation-openai");
const { openAISuite } = require("./lib/openai-suite.cjs");

openAISuite("OpenInference OpenAI instrumentation", {
  protocol: "json",
  instrumentation: () => new OpenAIInstrumentation(),
  expect: { manual: true, usage: "detailed", streamUsage: false, content: "request", embeddings: true, embeddingUsage: false, errors: false },
});
