// The OpenTelemetry project's openai instrumentation (GenAI semantic
// conventions) without message content, exporting OTLP/JSON.
"use strict";
const { OpenAIInstrumentation } = require("@opentelemetry/instrumentation-openai");
const { openAISuite } = require("./lib/openai-suite.cjs");

openAISuite("OpenTelemetry openai instrumentation, no content", {
  protocol: "json",
  instrumentation: () => new OpenAIInstrumentation({ captureMessageContent: false }),
  expect: { usage: "plain", streamUsage: true, content: "none", embeddings: true, embeddingUsage: true, errors: true },
});
