// OpenInference's Anthropic instrumentation, exporting OTLP/JSON, with the
// SDK's own tracing turned off (else every call is recorded twice).
"use strict";
const { AnthropicInstrumentation } = require("@arizeai/openinference-instrumentation-anthropic");
const Anthropic = require("@anthropic-ai/sdk");
const { anthropicSuite } = require("./lib/anthropic-suite.cjs");

anthropicSuite("OpenInference Anthropic instrumentation", {
  protocol: "json",
  setup: (provider, url) => {
    const instrumentation = new AnthropicInstrumentation();
    instrumentation.setTracerProvider(provider);
    instrumentation.manuallyInstrument(Anthropic);
    return new Anthropic.Anthropic({ baseURL: url, apiKey: "sk-ant-fake", maxRetries: 0, openTelemetry: false });
  },
  expect: { streamOutput: true, requestParameters: true, failureMessage: /fail-model/ },
});
