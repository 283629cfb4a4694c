// Prompts, datasets, experiments, scores and media through the official
// Langfuse JS SDK against a started Glassbox:
//
//   LANGFUSE_BASE_URL=... LANGFUSE_PUBLIC_KEY=... LANGFUSE_SECRET_KEY=... node --test resources.test.mjs
//
// FAKE_OPENAI_URL points the experiment's OpenAI client at an
// OpenAI-compatible server (base URL ending in /v1); without it the fake of
// fake-openai.mjs is started in-process. Without the LANGFUSE_* variables the
// tests are skipped, unless CI=true, where that is an error.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import { NodeSDK } from "@opentelemetry/sdk-node";
import { LangfuseSpanProcessor } from "@langfuse/otel";
import { LangfuseClient, LangfuseMedia, createEvaluatorFromAutoevals } from "@langfuse/client";
import { observeOpenAI } from "@langfuse/openai";
import OpenAI from "openai";
import { Levenshtein } from "autoevals";

import { answers, startFakeOpenAI } from "./fake-openai.mjs";

const missing = ["LANGFUSE_BASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"].filter((k) => !process.env[k]);
if (missing.length > 0 && process.env.CI === "true") {
  throw new Error(`${missing.join(", ")} must be set when CI=true`);
}
const skip = missing.length > 0 ? `${missing.join(", ")} not set; start Glassbox and export them` : false;

// run keeps names unique, so the suite can run again against the same server.
const run = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
const hex = (bytes) => randomBytes(bytes).toString("hex");

describe("Glassbox resources through the Langfuse SDK", { skip }, () => {
  let langfuse;
  let otel;
  let processor;
  let fake;
  let openaiBaseURL;

  before(async () => {
    langfuse = new LangfuseClient();
    processor = new LangfuseSpanProcessor({ exportMode: "batched" });
    otel = new NodeSDK({ spanProcessors: [processor] });
    otel.start();
    openaiBaseURL = process.env.FAKE_OPENAI_URL;
    if (!openaiBaseURL) {
      fake = await startFakeOpenAI();
      openaiBaseURL = fake.url;
    }
  });

  after(async () => {
    await langfuse?.flush();
    await otel?.shutdown();
    await fake?.close();
  });

  test("prompts: versions, labels, compilation, composition, listing and deletion", async () => {
    const name = `sdk-tests/${run}/movie-critic`; // a name with folders
    const v1 = await langfuse.prompt.create({
      name,
      type: "text",
      prompt: "As a {{criticLevel}} critic, rate {{movie}}.",
      labels: ["production"],
      config: { model: "gpt-4o", temperature: 0.7, response_format: { type: "json_object" } },
      tags: ["sdk-test"],
      commitMessage: "first version",
    });
    assert.equal(v1.version, 1);
    assert.deepEqual([...v1.labels].sort(), ["latest", "production"]);
    const v2 = await langfuse.prompt.create({ name, type: "text", prompt: "Review {{movie}} as a {{criticLevel}} critic.", labels: ["staging"] });
    assert.equal(v2.version, 2);

    const production = await langfuse.prompt.get(name, { cacheTtlSeconds: 0 });
    assert.equal(production.version, 1, "no label or version means production");
    assert.equal(production.compile({ criticLevel: "expert", movie: "Dune" }), "As a expert critic, rate Dune.");
    assert.deepEqual(production.config, { model: "gpt-4o", temperature: 0.7, response_format: { type: "json_object" } });
    assert.deepEqual(production.tags, ["sdk-test"]);
    assert.equal(production.commitMessage, "first version");

    assert.equal((await langfuse.prompt.get(name, { version: 2, cacheTtlSeconds: 0 })).prompt, "Review {{movie}} as a {{criticLevel}} critic.");
    assert.equal((await langfuse.prompt.get(name, { label: "staging", cacheTtlSeconds: 0 })).version, 2);
    assert.equal((await langfuse.prompt.get(name, { label: "latest", cacheTtlSeconds: 0 })).version, 2);

    await langfuse.prompt.update({ name, version: 2, newLabels: ["production"] });
    const moved = await langfuse.prompt.get(name, { cacheTtlSeconds: 0 });
    assert.equal(moved.version, 2, "production moved to version 2");
    assert.equal(moved.compile({ criticLevel: "casual", movie: "Up" }), "Review Up as a casual critic.");
    assert.ok(!(await langfuse.prompt.get(name, { version: 1, cacheTtlSeconds: 0 })).labels.includes("production"));

    const chatName = `sdk-tests/${run}/assistant`;
    await langfuse.prompt.create({
      name: chatName,
      type: "chat",
      labels: ["production"],
      prompt: [
        { role: "system", content: "You are a {{role}}." },
        { type: "placeholder", name: "history" },
        { role: "user", content: "{{question}}" },
      ],
    });
    const chat = await langfuse.prompt.get(chatName, { type: "chat", cacheTtlSeconds: 0 });
    assert.equal(chat.type, "chat");
    const messages = chat.compile(
      { role: "geography tutor", question: "What is the capital of France?" },
      { history: [{ role: "user", content: "Hello" }, { role: "assistant", content: "Hi! Ask me anything." }] },
    );
    assert.deepEqual(
      messages.map((m) => [m.role, m.content]),
      [
        ["system", "You are a geography tutor."],
        ["user", "Hello"],
        ["assistant", "Hi! Ask me anything."],
        ["user", "What is the capital of France?"],
      ],
    );

    // Composition: a reference to another text prompt is resolved on fetch.
    const partName = `sdk-tests/${run}/tone`;
    await langfuse.prompt.create({ name: partName, type: "text", prompt: "Be concise.", labels: ["production"] });
    const composedName = `sdk-tests/${run}/composed`;
    await langfuse.prompt.create({
      name: composedName,
      type: "text",
      labels: ["production"],
      prompt: `Answer {{question}}. @@@langfusePrompt:name=${partName}|label=production@@@`,
    });
    const composed = await langfuse.prompt.get(composedName, { cacheTtlSeconds: 0 });
    assert.equal(composed.compile({ question: "briefly" }), "Answer briefly. Be concise.");

    const list = await langfuse.api.prompts.list({ name });
    assert.equal(list.data.length, 1);
    assert.deepEqual(list.data[0].versions, [1, 2]);
    assert.equal(list.meta.totalItems, 1);

    await langfuse.prompt.delete(name, { version: 1 });
    await assert.rejects(langfuse.prompt.get(name, { version: 1, cacheTtlSeconds: 0 }));
    assert.equal((await langfuse.prompt.get(name, { cacheTtlSeconds: 0 })).version, 2);
  });

  test("datasets and an experiment with OpenAI calls and autoevals", async () => {
    const name = `sdk-tests/${run}/capitals`;
    const dataset = await langfuse.api.datasets.create({ name, description: "capital cities", metadata: { suite: "sdk" } });
    assert.equal(dataset.name, name);

    const questions = [
      ["What is the capital of France?", "Paris"],
      ["What is the capital of Japan?", "Tokyo"],
      ["What is the capital of Italy?", "Rome"], // the fake model does not know this one
    ];
    const png = Buffer.from("89504e470d0a1a0a" + hex(24), "hex");
    for (const [i, [question, expected]] of questions.entries()) {
      const input = { question };
      if (i === 0) {
        input.map = new LangfuseMedia({ source: "bytes", contentBytes: png, contentType: "image/png" });
      }
      const item = await langfuse.dataset.createItem({ datasetName: name, input, expectedOutput: expected, metadata: { index: i } });
      assert.equal(item.datasetName, name);
      assert.equal(item.status, "ACTIVE");
    }

    // Pages of two items: the SDK follows meta.totalPages.
    const fetched = await langfuse.dataset.get(name, { fetchItemsPageSize: 2 });
    assert.equal(fetched.items.length, 3);
    assert.equal(fetched.id, dataset.id);

    // The attachment was uploaded; the item's mediaReferences let the SDK
    // hydrate it into a reference with a signed URL.
    const withMedia = fetched.items.find((it) => it.metadata?.index === 0);
    const hydrated = withMedia.input.map;
    const reference = hydrated.referenceString;
    const mediaId = /\|id=([^|]+)\|/.exec(reference)?.[1];
    assert.ok(mediaId, `a media reference in ${JSON.stringify(hydrated)}`);
    assert.equal(hydrated.mediaId, mediaId);
    assert.equal(hydrated.contentLength, png.length);
    assert.equal(JSON.parse(JSON.stringify(withMedia.input)).map, reference,
      "the hydrated reference serialises back to the reference string");
    const viaSDK = await fetch(hydrated.url);
    assert.deepEqual(Buffer.from(await viaSDK.arrayBuffer()), png);
    const media = await langfuse.api.media.get(mediaId);
    assert.equal(media.contentType, "image/png");
    assert.equal(media.contentLength, png.length);
    const download = await fetch(media.url);
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), png);
    // The item names its media, resolved.
    const listedItem = await langfuse.api.datasetItems.get(withMedia.id);
    assert.equal(listedItem.mediaReferences.length, 1);
    assert.equal(listedItem.mediaReferences[0].field, "input");
    assert.equal(listedItem.mediaReferences[0].jsonPath, "$['map']");
    assert.equal(listedItem.mediaReferences[0].referenceString, reference);
    assert.equal(listedItem.mediaReferences[0].media.mediaId, mediaId);
    assert.equal(listedItem.mediaReferences[0].media.contentLength, png.length);

    const openai = observeOpenAI(new OpenAI({ apiKey: "fake-key", baseURL: openaiBaseURL }));
    const exactMatch = async ({ output, expectedOutput }) => ({ name: "exact_match", value: output === expectedOutput ? 1 : 0 });
    const verdict = async ({ output, expectedOutput }) => ({ name: "verdict", value: output === expectedOutput ? "correct" : "wrong" });
    const passed = async ({ output, expectedOutput }) => ({ name: "passed", value: output === expectedOutput ? 1 : 0, dataType: "BOOLEAN" });
    const averageExact = async ({ itemResults }) => ({
      name: "avg_exact_match",
      value: itemResults.reduce((sum, r) => sum + r.evaluations.find((e) => e.name === "exact_match").value, 0) / itemResults.length,
      comment: `${itemResults.length} items`,
    });
    const runName = `capitals-${run}`;
    const result = await fetched.runExperiment({
      name: "capitals",
      runName,
      description: "fake model on capitals",
      metadata: { model: "fake-model" },
      task: async (item) => {
        const response = await openai.chat.completions.create({
          model: "fake-model",
          messages: [{ role: "user", content: item.input.question }],
        });
        return response.choices[0].message.content;
      },
      evaluators: [exactMatch, verdict, passed, createEvaluatorFromAutoevals(Levenshtein)],
      runEvaluators: [averageExact],
    });
    // The experiment flushes scores, but a flush already under way when it
    // ends covers only the scores queued before it started.
    await langfuse.flush();
    assert.equal(result.itemResults.length, 3);
    assert.ok(result.datasetRunId, "run items returned the run id");
    assert.equal(result.runName, runName);

    const runRecord = await langfuse.api.datasets.getRun(name, runName);
    assert.equal(runRecord.id, result.datasetRunId);
    assert.equal(runRecord.description, "fake model on capitals");
    assert.equal(runRecord.datasetRunItems.length, 3);
    assert.deepEqual(
      runRecord.datasetRunItems.map((ri) => ri.traceId).sort(),
      result.itemResults.map((r) => r.traceId).sort(),
    );
    assert.deepEqual(
      runRecord.datasetRunItems.map((ri) => ri.datasetItemId).sort(),
      fetched.items.map((it) => it.id).sort(),
    );
    const runs = await langfuse.api.datasets.getRuns(name);
    assert.ok(runs.data.some((r) => r.name === runName));
    const runItems = await langfuse.api.datasetRunItems.list({ datasetId: dataset.id, runName });
    assert.equal(runItems.meta.totalItems, 3);

    // Per-item scores, one per evaluator and trace.
    for (const itemResult of result.itemResults) {
      const expected = itemResult.item.expectedOutput;
      const correct = answers[itemResult.item.input.question] === expected;
      assert.equal(itemResult.output, correct ? expected : `You said: ${itemResult.item.input.question}`);
      const scores = await langfuse.api.scores.getMany({ traceId: itemResult.traceId, limit: 50 });
      const byName = Object.fromEntries(scores.data.map((s) => [s.name, s]));
      assert.deepEqual(Object.keys(byName).sort(), ["Levenshtein", "exact_match", "passed", "verdict"]);
      assert.equal(byName.exact_match.dataType, "NUMERIC");
      assert.equal(byName.exact_match.value, correct ? 1 : 0);
      assert.equal(byName.verdict.dataType, "CATEGORICAL");
      assert.equal(byName.verdict.stringValue, correct ? "correct" : "wrong");
      assert.equal(byName.passed.dataType, "BOOLEAN");
      assert.equal(byName.passed.stringValue, correct ? "True" : "False");
      if (correct) {
        assert.equal(byName.Levenshtein.value, 1);
      } else {
        assert.ok(byName.Levenshtein.value < 1);
      }
      for (const s of scores.data) {
        assert.equal(s.observationId, runRecord.datasetRunItems.find((ri) => ri.traceId === itemResult.traceId).observationId);
      }
    }

    // The run-level score.
    const runScores = await langfuse.api.scores.getMany({ datasetRunId: result.datasetRunId });
    assert.equal(runScores.data.length, 1);
    assert.equal(runScores.data[0].name, "avg_exact_match");
    assert.ok(Math.abs(runScores.data[0].value - 2 / 3) < 1e-9);
    assert.equal(runScores.data[0].comment, "3 items");

    // The v4 reads: the runner's spans (langfuse.experiment.*) make the
    // experiment, its id being the dataset run's, and one item per dataset item.
    await processor.forceFlush();
    const fromStartTime = new Date(Date.now() - 3600 * 1000).toISOString();
    let experiment;
    await waitFor(async () => {
      const listed = await langfuse.api.experiments.list({ fromStartTime, name: runName, fields: "core,metadata,scores" });
      experiment = listed.data[0];
      return experiment?.itemCount === 3;
    }, "the experiment's three items are stored");
    assert.equal(experiment.id, result.datasetRunId);
    assert.equal(experiment.datasetId, dataset.id);
    assert.equal(experiment.description, "fake model on capitals");
    assert.deepEqual(experiment.metadata, { model: "fake-model" });
    assert.deepEqual(experiment.scores.map((s) => s.name), ["avg_exact_match"]);
    const items = await langfuse.api.experiments.listItems({
      fromStartTime, experimentId: experiment.id, fields: "core,dataset,io,scores", limit: 2,
    });
    assert.equal(items.data.length, 2);
    assert.ok(items.meta.cursor, "a third item on the next page");
    const rest = await langfuse.api.experiments.listItems({
      fromStartTime, experimentId: experiment.id, fields: "core,dataset,io,scores", cursor: items.meta.cursor,
    });
    const allItems = [...items.data, ...rest.data];
    assert.deepEqual(allItems.map((it) => it.experimentItemId).sort(), fetched.items.map((it) => it.id).sort());
    for (const it of allItems) {
      const itemResult = result.itemResults.find((r) => r.traceId === it.traceId);
      assert.ok(itemResult, `item ${it.id} is one of the run's traces`);
      assert.equal(it.environment, "sdk-experiment");
      assert.equal(it.experimentDatasetId, dataset.id);
      assert.equal(it.output, itemResult.output);
      assert.equal(it.expectedOutput, itemResult.item.expectedOutput);
      assert.deepEqual(it.input.question, itemResult.item.input.question);
      assert.deepEqual(it.scores.map((s) => s.name).sort(), ["Levenshtein", "exact_match", "passed", "verdict"]);
    }

    await langfuse.api.datasets.deleteRun(name, runName);
    await assert.rejects(langfuse.api.datasets.getRun(name, runName));
  });

  test("scores of each data type, score configs and direct creation", async () => {
    const traceId = hex(16);
    const sessionId = `session-${run}`;
    const ids = { numeric: `num-${run}`, categorical: `cat-${run}`, boolean: `bool-${run}` };
    langfuse.score.create({ id: ids.numeric, traceId, name: "accuracy", value: 0.92, comment: "close enough", metadata: { judge: "exact" } });
    langfuse.score.create({ id: ids.categorical, traceId, name: "tone", value: "polite" });
    langfuse.score.create({ id: ids.boolean, traceId, name: "safe", value: 1, dataType: "BOOLEAN" });
    langfuse.score.create({ sessionId, name: "session-quality", value: 4 });
    await langfuse.score.flush();

    const scores = await langfuse.api.scores.getMany({ traceId });
    const byId = Object.fromEntries(scores.data.map((s) => [s.id, s]));
    assert.equal(scores.meta.totalItems, 3);
    assert.equal(byId[ids.numeric].dataType, "NUMERIC");
    assert.equal(byId[ids.numeric].value, 0.92);
    assert.equal(byId[ids.numeric].comment, "close enough");
    assert.deepEqual(byId[ids.numeric].metadata, { judge: "exact" });
    assert.equal(byId[ids.categorical].dataType, "CATEGORICAL");
    assert.equal(byId[ids.categorical].stringValue, "polite");
    assert.equal(byId[ids.boolean].dataType, "BOOLEAN");
    assert.equal(byId[ids.boolean].value, 1);
    assert.equal(byId[ids.boolean].stringValue, "True");

    // The v4-era read: typed values, field groups, cursor pages.
    const v3 = await langfuse.api.scoresV3.getManyV3({ traceId, fields: "details,subject", limit: 2 });
    assert.equal(v3.data.length, 2);
    assert.ok(v3.meta.cursor, "a next page");
    const rest = await langfuse.api.scoresV3.getManyV3({ traceId, fields: "details,subject", limit: 2, cursor: v3.meta.cursor });
    const v3ById = Object.fromEntries([...v3.data, ...rest.data].map((s) => [s.id, s]));
    assert.equal(Object.keys(v3ById).length, 3);
    assert.equal(v3ById[ids.numeric].value, 0.92);
    assert.equal(v3ById[ids.boolean].value, true);
    assert.equal(v3ById[ids.categorical].value, "polite");
    assert.deepEqual(v3ById[ids.numeric].subject, { kind: "trace", id: traceId });
    assert.deepEqual(v3ById[ids.numeric].metadata, { judge: "exact" });

    const sessionScores = await langfuse.api.scores.getMany({ sessionId });
    assert.equal(sessionScores.data.length, 1);
    assert.equal(sessionScores.data[0].value, 4);
    assert.equal((await langfuse.api.scores.getMany({ traceId, dataType: "CATEGORICAL" })).data.length, 1);

    const one = await langfuse.api.scores.getById(ids.numeric);
    assert.equal(one.traceId, traceId);

    // A config bounds the scores that name it.
    const config = await langfuse.api.scoreConfigs.create({ name: `relevance-${run}`, dataType: "NUMERIC", minValue: 0, maxValue: 1 });
    assert.equal(config.dataType, "NUMERIC");
    const ok = await langfuse.api.scores.create({ traceId, name: "ignored", value: 0.5, configId: config.id });
    const stored = await langfuse.api.scores.getById(ok.id);
    assert.equal(stored.name, config.name, "the score takes the config's name");
    assert.equal(stored.configId, config.id);
    await assert.rejects(langfuse.api.scores.create({ traceId, name: "x", value: 3, configId: config.id }));
    const configs = await langfuse.api.scoreConfigs.get({ limit: 100 });
    assert.ok(configs.data.some((c) => c.id === config.id));

    await langfuse.api.legacy.scoreV1.delete(ok.id);
    await waitFor(async () => {
      try {
        await langfuse.api.scores.getById(ok.id);
        return false;
      } catch {
        return true;
      }
    }, "the deleted score disappears");
  });
});

async function waitFor(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`timed out waiting until ${what}`);
}
