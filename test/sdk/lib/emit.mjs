// Emits agent traces through the official Langfuse JS SDK (OTLP/JSON over
// HTTP), configured from LANGFUSE_BASE_URL / LANGFUSE_PUBLIC_KEY /
// LANGFUSE_SECRET_KEY exactly as an application would be.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { startActiveObservation, startObservation, propagateAttributes, getActiveTraceId } from "@langfuse/tracing";

// emitTraces sends `count` traces, each an agent span with a generation, a
// tool call and a nested span, and returns what a reader should find.
export async function emitTraces({ count = 3, runTag = `run-${Date.now()}` } = {}) {
  const processor = new LangfuseSpanProcessor({ exportMode: "batched", flushAt: 50 });
  const sdk = new NodeSDK({ spanProcessors: [processor] });
  sdk.start();
  const traces = [];
  for (let i = 0; i < count; i++) {
    const userId = `user-${i % 2}`;
    const sessionId = `session-${runTag}`;
    const traceId = await propagateAttributes(
      { userId, sessionId, tags: ["sdk-test", runTag], metadata: { run: runTag } },
      () =>
        startActiveObservation(
          "agent-run",
          async (root) => {
            root.update({ input: { question: `question ${i}` } });
            await startActiveObservation(
              "llm-call",
              async (gen) => {
                gen.update({
                  model: "gpt-4o-mini",
                  modelParameters: { temperature: 0.2 },
                  input: [{ role: "user", content: `question ${i}` }],
                  output: { role: "assistant", content: `answer ${i}` },
                  usageDetails: { input: 12, output: 7, total: 19 },
                  costDetails: { input: 0.00012, output: 0.00007, total: 0.00019 },
                });
              },
              { asType: "generation" },
            );
            await startActiveObservation(
              "search-tool",
              async (tool) => {
                tool.update({ input: { q: `q${i}` }, output: { hits: 3 } });
                const inner = startObservation("parse-results", { input: "raw" });
                inner.update({ output: "parsed" });
                inner.end();
              },
              { asType: "tool" },
            );
            root.update({ output: { answer: `answer ${i}` } });
            return getActiveTraceId();
          },
          { asType: "agent" },
        ),
    );
    traces.push({ traceId, userId, sessionId, question: `question ${i}` });
  }
  await processor.forceFlush();
  await sdk.shutdown();
  return { runTag, traces };
}
