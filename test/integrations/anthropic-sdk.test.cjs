// The Anthropic SDK's own OpenTelemetry tracing (GenAI semantic conventions,
// content recorded), exporting OTLP protobuf.
"use strict";
const Anthropic = require("@anthropic-ai/sdk");
const { anthropicSuite } = require("./lib/anthropic-suite.cjs");

anthropicSuite("Anthropic SDK tracing", {
  protocol: "protobuf",
  setup: (provider, url) =>
    new Anthropic.Anthropic({ baseURL: url, apiKey: "sk-ant-fake", maxRetries: 0, openTelemetry: { tracerProvider: provider, traces: { contentMode: "content" } } }),
  // The SDK names the error type, not the message.
  expect: { streamOutput: false, requestParameters: false, failureMessage: /invalid_request_error/ },
});
