// Drives a stategraph server with LangGraph's own JS client, `@langchain/langgraph-sdk`.
//
// Usage: NODE_PATH=<node_modules with the SDK> node sdk.cjs <base_url>
//
// The server must serve the chat agent of `stategraph-examples` as `agent` (it calls
// the weather tool for "What should I pack for Oslo tomorrow?", streaming its words
// with a pause) and the demo pipeline as `research`. Every check prints one line
// (`ok` or `FAIL`); the script exits 1 if any failed.
"use strict";

const { check, expect, finish, short } = require("./checks.cjs");

const { Client } = require("@langchain/langgraph-sdk");

const url = process.argv[2];
const client = new Client({ apiUrl: url });
const QUESTION = { messages: [{ type: "human", content: "What should I pack for Oslo tomorrow?" }] };
async function collect(parts) {
  const out = [];
  for await (const part of parts) out.push(part);
  return out;
}

/** The answer's checks: the tool was called, its result used, in LangChain's shape. */
function expectAnswered(messages) {
  const types = messages.map((m) => m.type);
  expect(short(types) === short(["human", "ai", "tool", "ai"]), `message types: ${short(types)}`);
  const call = messages[1].tool_calls[0];
  expect(call.name === "get_weather" && call.args.city === "Oslo" && call.type === "tool_call", `tool call: ${short(call)}`);
  expect(messages[2].tool_call_id === call.id, `tool message: ${short(messages[2])}`);
  expect(messages[3].content.includes("rain jacket"), `answer: ${short(messages[3])}`);
}

async function streamed() {
  const thread = await client.threads.create();
  const parts = await collect(
    client.runs.stream(thread.thread_id, "agent", {
      input: QUESTION,
      streamMode: ["values", "updates", "messages-tuple"],
    }),
  );
  const events = parts.map((p) => p.event);
  expect(events[0] === "metadata", `first event: ${events[0]}`);
  const pieces = parts.filter((p) => p.event === "messages");
  expect(pieces.length > 5, `the answer came in ${pieces.length} piece(s)`);
  expect(pieces.every((p) => p.data[0].type === "AIMessageChunk" || p.data[0].type === "tool"), `piece types: ${short(pieces.map((p) => p.data[0].type))}`);
  const values = parts.filter((p) => p.event === "values");
  expectAnswered(values[values.length - 1].data.messages);
  const updates = parts.filter((p) => p.event === "updates").map((p) => Object.keys(p.data)[0]);
  expect(short(updates) === short(["memory", "agent", "tools", "agent"]), `updates: ${short(updates)}`);
}

async function joinedFromTheStart() {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", {
    input: QUESTION,
    streamMode: ["values", "updates"],
    streamResumable: true,
  });
  // While it runs: "-1" replays from the first event, then follows it live.
  const before = (await client.runs.get(thread.thread_id, run.run_id)).status;
  expect(before === "pending" || before === "running", `joined a run already ${before}`);
  const live = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
  const liveEvents = live.map((p) => p.event);
  expect(liveEvents.includes("values") && liveEvents.includes("updates"), `joined events: ${short(liveEvents)}`);
  const last = live.filter((p) => p.event === "values").pop();
  expectAnswered(last.data.messages);
  // After the end: the same events again.
  const again = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
  expect(short(again.map((p) => [p.event, p.data])) === short(live.map((p) => [p.event, p.data])), `replayed: ${short(again.map((p) => p.event))} vs ${short(liveEvents)}`);
  const status = (await client.runs.get(thread.thread_id, run.run_id)).status;
  expect(status === "success", `run status: ${status}`);
  // By the run's id alone (no thread): the same events.
  const byRun = await collect(client.runs.joinStream(null, run.run_id, { lastEventId: "-1" }));
  expect(short(byRun.map((p) => [p.event, p.data])) === short(live.map((p) => [p.event, p.data])), `joined by run id: ${short(byRun.map((p) => p.event))}`);
}

async function threadStream() {
  const thread = await client.threads.create();
  const first = await client.runs.wait(thread.thread_id, "agent", { input: QUESTION });
  expectAnswered(first.messages);
  // From the start: the finished run, its end; then it stays open for the next run.
  const controller = new AbortController();
  const seen = [];
  const watching = (async () => {
    try {
      for await (const part of client.threads.joinStream(thread.thread_id, { lastEventId: "-1", streamMode: ["run_modes", "lifecycle"], signal: controller.signal })) {
        seen.push(part);
        if (seen.filter((p) => p.event === "metadata" && p.data.status === "run_done").length === 2) return;
      }
    } catch (e) {
      if (!controller.signal.aborted) throw e;
    }
  })();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: "thanks" } });
  const timer = setTimeout(() => controller.abort(), 20000);
  await watching;
  clearTimeout(timer);
  const ends = seen.filter((p) => p.event === "metadata" && p.data.status === "run_done");
  expect(ends.length === 2, `thread stream ends: ${short(seen.map((p) => p.event))}`);
  const values = seen.filter((p) => p.event === "values").pop();
  const texts = values ? values.data.messages.map((m) => m.content) : [];
  expect(texts.includes("thanks") && texts.length > first.messages.length, `last values: ${short(texts)}`);
}

async function history() {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: QUESTION });
  const states = await client.threads.getHistory(thread.thread_id);
  expect(states.length >= 3, `history of ${states.length} checkpoints`);
  expectAnswered(states[0].values.messages);
  expect(states[0].next.length === 0, `latest next: ${short(states[0].next)}`);
  expect(states[states.length - 1].metadata.step === -1, `oldest: ${short(states[states.length - 1].metadata)}`);
  const limited = await client.threads.getHistory(thread.thread_id, { limit: 2 });
  expect(limited.length === 2 && limited[0].checkpoint.checkpoint_id === states[0].checkpoint.checkpoint_id, `limit 2: ${short(limited.map((s) => s.checkpoint))}`);
  const state = await client.threads.getState(thread.thread_id);
  expect(state.checkpoint.checkpoint_id === states[0].checkpoint.checkpoint_id, `state: ${short(state.checkpoint)}`);
}

async function waited() {
  const thread = await client.threads.create();
  const values = await client.runs.wait(thread.thread_id, "agent", { input: QUESTION });
  expectAnswered(values.messages);
  const next = await client.runs.wait(thread.thread_id, "agent", { input: { messages: "thanks" } });
  expect(next.messages.length === 6 && next.messages[4].type === "human", `second turn: ${short(next.messages.map((m) => m.type))}`);
  // The research pipeline pauses for a verdict; a resume finishes it.
  const research = await client.threads.create();
  const paused = await client.runs.wait(research.thread_id, "research", { input: { topic: "Rust at work" } });
  expect(paused.__interrupt__ && paused.__interrupt__.length === 1, `paused: ${short(paused)}`);
  const done = await client.runs.wait(research.thread_id, "research", { command: { resume: { decision: "publish" } } });
  expect(!done.__interrupt__, `resumed: ${short(done)}`);
}

(async () => {
  await check("runs.stream: values, updates and the answer piece by piece, in LangChain's shape", streamed);
  await check("runs.joinStream with lastEventId -1: while running, after the end, by run id alone", joinedFromTheStart);
  await check("threads.joinStream from the start follows the next run", threadStream);
  await check("threads.getHistory / getState", history);
  await check("runs.wait: a chat turn, a second turn, a pause and its resume", waited);
  finish();
})();
