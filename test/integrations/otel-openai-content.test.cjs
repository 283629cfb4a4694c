// The OpenTelemetry project's openai instrumentation (GenAI semantic
// conventions) with message content captured, exporting OTLP protobuf. It
// emits the content as log events, not on the span, so Glassbox (which
// takes traces) stores no content from it.
"use strict";
const { OpenAIInstrumentation } = require("@opentelemetry/instrumentation-openai");
const { openAISuite } = require("./lib/openai-suite.cjs");

openAISuite("OpenTelemetry openai instrumentation, content captured", {
  protocol: "protobuf",
  instrumentation: () => new OpenAIInstrumentation({ captureMessageContent: true }),
  expect: { usage: "plain", streamUsage: true, content: "none", embeddings: true, embeddingUsage: true, errors: true },
});
