// A deterministic model provider for the integration tests, so no test needs
// the network: OpenAI's chat completions and embeddings and Anthropic's
// messages, each streamed or not, with token usage (cached and reasoning
// tokens included) and tool calls. A request with tools and no tool result
// yet gets a call of the first tool; model "fail-model" gets a 400.
"use strict";
const http = require("node:http");

// usage is what every completion reports, so tests know the exact figures.
const usage = { input: 24, output: 12, cachedInput: 8, reasoning: 4 };
const embeddingTokens = 6;
const toolArguments = { city: "Paris" };

const text = (content) => {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join(" ");
  return "";
};

// answer is the reply to the conversation: the tool's result once a tool
// has answered, else an echo of the last user message.
function answer(messages) {
  const toolResult = messages.find((m) => m.role === "tool" || (Array.isArray(m.content) && m.content.some((p) => p.type === "tool_result")));
  if (toolResult) return "It is sunny in Paris.";
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  return `You said: ${text(lastUser?.content ?? "").trim()}`;
}

const wantsTool = (req) => Array.isArray(req.tools) && req.tools.length > 0 && answer(req.messages ?? []) !== "It is sunny in Paris.";

function openaiUsage() {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cachedInput },
    completion_tokens_details: { reasoning_tokens: usage.reasoning },
  };
}

function openaiToolCall(req) {
  const tool = req.tools[0];
  return { id: "call_fake_1", type: "function", function: { name: tool.function?.name ?? tool.name, arguments: JSON.stringify(toolArguments) } };
}

function chatCompletion(req, res) {
  const model = req.model ?? "fake-model";
  const base = { id: "chatcmpl-fake", created: 1700000000, model, system_fingerprint: "fp_fake" };
  const tool = wantsTool(req) ? openaiToolCall(req) : null;
  const content = tool ? null : answer(req.messages ?? []);
  if (!req.stream) {
    return json(res, 200, {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content, refusal: null, ...(tool && { tool_calls: [tool] }) }, finish_reason: tool ? "tool_calls" : "stop", logprobs: null }],
      usage: openaiUsage(),
    });
  }
  const chunk = (delta, finish = null, extra = {}) => ({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...extra });
  const events = [chunk({ role: "assistant", content: tool ? null : "" })];
  if (tool) {
    events.push(chunk({ tool_calls: [{ index: 0, id: tool.id, type: "function", function: { name: tool.function.name, arguments: "" } }] }));
    events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: tool.function.arguments } }] }));
  } else {
    for (const word of content.split(/(?<= )/)) events.push(chunk({ content: word }));
  }
  events.push(chunk({}, tool ? "tool_calls" : "stop"));
  if (req.stream_options?.include_usage) events.push({ ...base, object: "chat.completion.chunk", choices: [], usage: openaiUsage() });
  sse(res, events.map((e) => ({ data: e })).concat([{ data: "[DONE]" }]));
}

function embeddings(req, res) {
  const inputs = Array.isArray(req.input) ? req.input : [req.input];
  const vector = [0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8];
  const encode = (v) => (req.encoding_format === "base64" ? Buffer.from(new Float32Array(v).buffer).toString("base64") : v);
  json(res, 200, {
    object: "list",
    model: req.model,
    data: inputs.map((_, index) => ({ object: "embedding", index, embedding: encode(vector) })),
    usage: { prompt_tokens: embeddingTokens * inputs.length, total_tokens: embeddingTokens * inputs.length },
  });
}

function anthropicMessage(req, res) {
  const model = req.model;
  const tool = wantsTool(req) ? { type: "tool_use", id: "toolu_fake_1", name: req.tools[0].name, input: toolArguments } : null;
  const content = tool ? [tool] : [{ type: "text", text: answer(req.messages ?? []) }];
  const stop = tool ? "tool_use" : "end_turn";
  const fullUsage = { input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: usage.cachedInput, cache_creation_input_tokens: 0 };
  if (!req.stream) {
    return json(res, 200, { id: "msg_fake", type: "message", role: "assistant", model, content, stop_reason: stop, stop_sequence: null, usage: fullUsage });
  }
  const events = [
    { event: "message_start", data: { type: "message_start", message: { id: "msg_fake", type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...fullUsage, output_tokens: 1 } } } },
  ];
  if (tool) {
    events.push({ event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { ...tool, input: {} } } });
    events.push({ event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(toolArguments) } } });
  } else {
    events.push({ event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } });
    for (const word of content[0].text.split(/(?<= )/)) {
      events.push({ event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: word } } });
    }
  }
  events.push({ event: "content_block_stop", data: { type: "content_block_stop", index: 0 } });
  events.push({ event: "message_delta", data: { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output } } });
  events.push({ event: "message_stop", data: { type: "message_stop" } });
  sse(res, events);
}

function json(res, status, body) {
  const raw = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(raw), "x-request-id": "req_fake" });
  res.end(raw);
}

function sse(res, events) {
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
  for (const e of events) {
    if (e.event) res.write(`event: ${e.event}\n`);
    res.write(`data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

const routes = {
  "/v1/chat/completions": chatCompletion,
  "/v1/embeddings": embeddings,
  "/v1/messages": anthropicMessage,
};

// startFakeProvider listens on a free port of 127.0.0.1 and resolves to
// { url, close }; url has no path (OpenAI clients want url + "/v1").
function startFakeProvider() {
  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const route = routes[new URL(req.url, "http://fake").pathname];
      if (req.method !== "POST" || !route) return json(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: "not_found_error" } });
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        return json(res, 400, { error: { message: "body is not JSON", type: "invalid_request_error" } });
      }
      if (body.model === "fail-model") {
        return json(res, 400, { type: "error", error: { message: "The model `fail-model` does not exist", type: "invalid_request_error" } });
      }
      route(body, res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

module.exports = { startFakeProvider, usage, embeddingTokens, toolArguments };
