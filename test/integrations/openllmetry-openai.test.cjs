// OpenLLMetry's (@traceloop) OpenAI instrumentation, exporting OTLP protobuf.
"use strict";
const { OpenAIInstrumentation } = require("@traceloop/instrumentation-openai");
const { openAISuite } = require("./lib/openai-suite.cjs");

openAISuite("OpenLLMetry OpenAI instrumentation", {
  protocol: "protobuf",
  instrumentation: () => new OpenAIInstrumentation({ enrichTokens: false }),
  expect: { usage: "plain", streamUsage: false, content: "messages", embeddings: false, errors: false },
});
