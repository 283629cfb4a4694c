// A deterministic OpenAI-compatible server for the SDK tests: POST
// /v1/chat/completions answers from a fixed table keyed by the last user
// message (else echoes it), with token usage counted in words, so tests
// need no network and no real model.
import http from "node:http";

// answers maps a question to the reply the fake model gives.
export const answers = {
  "What is the capital of France?": "Paris",
  "What is the capital of Japan?": "Tokyo",
  "What is 2 + 2?": "4",
};

const words = (text) => (text.trim() === "" ? 0 : text.trim().split(/\s+/).length);

function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === "string" ? part : part?.text ?? "")).join(" ");
  }
  return "";
}

// reply is the fake model's answer to a list of chat messages.
export function reply(messages) {
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const question = contentText(lastUser?.content ?? "").trim();
  return answers[question] ?? `You said: ${question}`;
}

function completion(request) {
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const content = reply(messages);
  const promptTokens = messages.reduce((n, m) => n + words(contentText(m.content)), 0);
  const completionTokens = words(content);
  return {
    id: "chatcmpl-fake-" + promptTokens + "-" + completionTokens,
    object: "chat.completion",
    created: 1700000000,
    model: request.model ?? "fake-model",
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, finish_reason: "stop", logprobs: null }],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

// startFakeOpenAI listens on 127.0.0.1 (port 0 picks a free one) and resolves
// to { url, close }, where url is the base URL to give the OpenAI client
// (it ends in /v1).
export function startFakeOpenAI({ port = 0 } = {}) {
  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      const path = new URL(req.url, "http://fake").pathname;
      if (req.method !== "POST" || !/^(\/v1)?\/chat\/completions$/.test(path)) {
        send(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error" } });
        return;
      }
      let request;
      try {
        request = JSON.parse(raw);
      } catch {
        send(res, 400, { error: { message: "body is not JSON", type: "invalid_request_error" } });
        return;
      }
      if (request.stream) {
        send(res, 400, { error: { message: "streaming is not supported by the fake", type: "invalid_request_error" } });
        return;
      }
      send(res, 200, completion(request));
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address();
      resolve({
        url: `http://127.0.0.1:${bound}/v1`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

// Run on its own: node fake-openai.mjs [port]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await startFakeOpenAI({ port: Number(process.argv[2] ?? 0) });
  console.log(url);
}
