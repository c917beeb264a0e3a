// A chat page built the way LangGraph's docs build one: React and `useStream` from
// `@langchain/langgraph-sdk/react`, nothing else. The server's browser test bundles it
// with esbuild and drives it in headless Chromium.
//
// `?api=<server url>&assistant=<graph>` names what it talks to. The thread id is kept
// in the page's session storage, so a reload shows the same thread (and rejoins a run
// still going: `reconnectOnMount`).
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(window.location.search);

function text(content) {
  return typeof content === "string" ? content : JSON.stringify(content);
}

function Message({ message }) {
  return (
    <li className="message" data-type={message.type} data-id={message.id}>
      <span className="content">{text(message.content)}</span>
      {(message.tool_calls || []).map((call) => (
        <span key={call.id} className="tool-call" data-name={call.name}>
          {`${call.name}(${JSON.stringify(call.args)})`}
        </span>
      ))}
    </li>
  );
}

function App() {
  const [threadId, setThreadId] = useState(() => window.sessionStorage.getItem("thread"));
  const [draft, setDraft] = useState("");
  const thread = useStream({
    apiUrl: params.get("api"),
    assistantId: params.get("assistant") || "agent",
    messagesKey: "messages",
    threadId,
    onThreadId: (id) => {
      window.sessionStorage.setItem("thread", id);
      setThreadId(id);
    },
    reconnectOnMount: true,
  });
  const send = (event) => {
    event.preventDefault();
    thread.submit(
      { messages: [{ type: "human", content: draft }] },
      { streamResumable: true, onDisconnect: "continue" },
    );
    setDraft("");
  };
  const interrupt = thread.interrupt;
  return (
    <main>
      <ul id="messages">
        {thread.messages.map((m) => (
          <Message key={m.id} message={m} />
        ))}
      </ul>
      <p id="status">{thread.isLoading ? "loading" : "idle"}</p>
      {interrupt && (
        <div id="interrupt">
          <pre>{JSON.stringify(interrupt.value)}</pre>
          <button
            id="approve"
            type="button"
            onClick={() => thread.submit(undefined, { command: { resume: true }, streamResumable: true })}
          >
            Approve
          </button>
        </div>
      )}
      <form id="send" onSubmit={send}>
        <input id="text" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button type="submit">Send</button>
      </form>
      <p id="error">{thread.error ? String(thread.error) : ""}</p>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
