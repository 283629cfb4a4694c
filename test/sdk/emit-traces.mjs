// Sends traces through the official Langfuse JS SDK and prints, as JSON on
// stdout, what it sent, so that a Go test can read them back from storage.
import { emitTraces } from "./lib/emit.mjs";

const result = await emitTraces({ count: Number(process.env.TRACE_COUNT ?? "3"), runTag: process.env.RUN_TAG });
process.stdout.write(JSON.stringify(result) + "\n");
