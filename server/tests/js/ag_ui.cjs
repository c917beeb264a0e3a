// Drives a stategraph server with CopilotKit's AG-UI adapter, `@ag-ui/langgraph`'s
// `LangGraphAgent`, exactly as a CopilotKit runtime would.
//
// Usage: NODE_PATH=<node_modules with @ag-ui/langgraph> node ag_ui.cjs <base_url>
//
// The server must serve the chat agent of `stategraph-examples` as `agent`, and as
// `agent_approval` asking before it runs a tool. Every
// check prints one line (`ok` or `FAIL`); the script exits 1 if any failed.
"use strict";

const { check, expect, finish, short } = require("./checks.cjs");

const { randomUUID } = require("node:crypto");
const { LangGraphAgent } = require("@ag-ui/langgraph");

const url = process.argv[2];
/**
 * One AG-UI run of `text` (on a new thread, or `options.threadId`; `options.resume`
 * answers an interrupt): every event the agent emits, in order.
 */
function run(text, options = {}) {
  const agent = new LangGraphAgent({ deploymentUrl: url, graphId: options.graphId || "agent" });
  const input = {
    threadId: options.threadId || randomUUID(),
    runId: randomUUID(),
    messages: [{ id: options.messageId || randomUUID(), role: "user", content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...(options.resume ? { resume: options.resume } : {}),
  };
  return new Promise((resolve, reject) => {
    const events = [];
    const timer = setTimeout(() => reject(new Error(`no end after 30 s; events: ${events.map((e) => e.type)}`)), 30000);
    agent.run(input).subscribe({
      next: (event) => events.push(event),
      error: (error) => {
        clearTimeout(timer);
        reject(new Error(`${error}; events so far: ${events.map((e) => e.type)}`));
      },
      complete: () => {
        clearTimeout(timer);
        resolve(events);
      },
    });
  });
}

function types(events) {
  return events.map((e) => e.type).filter((t) => t !== "RAW" && t !== "STATE_SNAPSHOT" && t !== "STEP_STARTED" && t !== "STEP_FINISHED");
}

/** The text of each text message, by message id, in order. */
function texts(events) {
  const out = new Map();
  for (const e of events) {
    if (e.type === "TEXT_MESSAGE_START") out.set(e.messageId, "");
    if (e.type === "TEXT_MESSAGE_CONTENT") out.set(e.messageId, (out.get(e.messageId) || "") + e.delta);
  }
  return [...out.values()];
}

/** Every started text message and tool call ends before the run does. */
function expectBalanced(events) {
  const list = types(events);
  expect(list[0] === "RUN_STARTED", `first event: ${list[0]}`);
  expect(list[list.length - 1] === "RUN_FINISHED", `last event: ${list[list.length - 1]} of ${list}`);
  expect(!list.includes("RUN_ERROR"), `a run error: ${JSON.stringify(events.find((e) => e.type === "RUN_ERROR"))}`);
  const count = (t) => list.filter((x) => x === t).length;
  expect(count("TEXT_MESSAGE_START") === count("TEXT_MESSAGE_END"), `text messages: ${list}`);
  expect(count("TOOL_CALL_START") === count("TOOL_CALL_END"), `tool calls: ${list}`);
}

async function textTurn() {
  const events = await run("Hello there");
  expectBalanced(events);
  const said = texts(events);
  expect(said.length === 1 && said[0].startsWith("Hello! Ask me what to pack"), `text: ${JSON.stringify(said)}`);
  const chunks = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT");
  expect(chunks.length > 5, `the answer came in ${chunks.length} piece(s)`);
  const snapshot = events.filter((e) => e.type === "MESSAGES_SNAPSHOT").pop();
  expect(snapshot && snapshot.messages.map((m) => m.role).join(",") === "user,assistant", `messages snapshot: ${JSON.stringify(snapshot)}`);
}

async function toolTurn() {
  const events = await run("What should I pack for Oslo tomorrow?");
  expectBalanced(events);
  const start = events.find((e) => e.type === "TOOL_CALL_START");
  expect(start && start.toolCallName === "get_weather", `tool call start: ${JSON.stringify(start)}`);
  const args = events.filter((e) => e.type === "TOOL_CALL_ARGS" && e.toolCallId === start.toolCallId).map((e) => e.delta).join("");
  expect(JSON.parse(args).city === "Oslo", `tool call args: ${args}`);
  const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
  expect(result && result.toolCallId === start.toolCallId && result.content.includes("rain jacket"), `tool result: ${JSON.stringify(result)}`);
  const said = texts(events);
  expect(said.some((t) => t.startsWith("Here is what I found")), `texts: ${JSON.stringify(said)}`);
  const snapshot = events.filter((e) => e.type === "MESSAGES_SNAPSHOT").pop();
  const roles = snapshot.messages.map((m) => m.role).join(",");
  expect(roles === "user,assistant,tool,assistant", `messages snapshot roles: ${roles}`);
  expect(snapshot.messages[1].toolCalls[0].function.name === "get_weather", `snapshot tool call: ${JSON.stringify(snapshot.messages[1])}`);
}

async function interruptTurn() {
  const threadId = randomUUID();
  const messageId = randomUUID();
  const question = "What should I pack for Oslo tomorrow?";
  const paused = await run(question, { graphId: "agent_approval", threadId, messageId });
  expectBalanced(paused);
  const asked = paused.find((e) => e.type === "CUSTOM" && e.name === "on_interrupt");
  expect(asked && asked.rawEvent && asked.rawEvent.id, `no on_interrupt event: ${types(paused)}`);
  expect(JSON.parse(asked.value).tool_calls[0].name === "get_weather", `interrupt: ${asked.value}`);
  expect(!paused.some((e) => e.type === "TOOL_CALL_RESULT"), "the tool ran before it was approved");
  const resumed = await run(question, {
    graphId: "agent_approval",
    threadId,
    messageId,
    resume: [{ interruptId: asked.rawEvent.id, status: "resolved", payload: true }],
  });
  expectBalanced(resumed);
  const result = resumed.find((e) => e.type === "TOOL_CALL_RESULT");
  expect(result && result.content.includes("rain jacket"), `after approval: ${types(resumed)}`);
  expect(texts(resumed).some((t) => t.startsWith("Here is what I found")), `texts: ${JSON.stringify(texts(resumed))}`);
}

(async () => {
  await check("LangGraphAgent: a text turn streams its answer and reaches RUN_FINISHED", textTurn);
  await check("LangGraphAgent: a tool-call turn: the call, its result, the answer, RUN_FINISHED", toolTurn);
  await check("LangGraphAgent: an approval interrupt ends the run; resuming it runs the tool", interruptTurn);
  finish();
})();
