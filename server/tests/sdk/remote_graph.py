"""Drives a stategraph server with `RemoteGraph`, from LangGraph's own `langgraph` package.

Usage: python remote_graph.py <base_url>

The server must serve the test graphs `job` (first → second → question, which asks a
human when `ask`) and `nested` (`job` as its subgraph `inner`). `RemoteGraph` is used
alone and as a node of a local LangGraph graph whose state has keys the served graph
lacks. Every check prints one line (`ok` or `FAIL`); the script exits 1 if any failed.
"""

from __future__ import annotations

import sys
import time
import traceback
import uuid
from typing import Optional, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command, StateSnapshot

URL = sys.argv[1]
QUESTION = {"question": "go on?"}
failures = 0


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def check(name, fn):
    global failures
    start = time.monotonic()
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - every failure is reported, then the next check runs
        failures += 1
        detail = str(error) if isinstance(error, CheckFailed) else "".join(traceback.format_exception(error))
        print(f"FAIL {name}: {detail}", flush=True)
    else:
        print(f"ok   {name} ({time.monotonic() - start:.2f}s)", flush=True)


def config():
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


nested = RemoteGraph("nested", url=URL)
job = RemoteGraph("job", url=URL)


def invoke_pauses():
    cfg = config()
    out = nested.invoke({"ask": True}, cfg)
    expect("__interrupt__" in out, f"no __interrupt__ in the output: {out!r}")
    expect(out["__interrupt__"][0]["value"] == QUESTION, f"interrupt: {out['__interrupt__']!r}")
    v2 = job.invoke({"ask": True}, config(), version="v2")
    expect(v2.value.get("log") == ["first", "second"], f"v2 value: {v2.value!r}")
    expect("__interrupt__" not in v2.value, f"v2 value keeps the interrupt: {v2.value!r}")
    expect([i.value for i in v2.interrupts] == [QUESTION], f"v2 interrupts: {v2.interrupts!r}")


def state_with_subgraphs():
    cfg = config()
    nested.invoke({"ask": True}, cfg)
    state = nested.get_state(cfg, subgraphs=True)
    expect(isinstance(state, StateSnapshot) and state.next == ("inner",), f"state: {state!r}")
    expect([i.value for i in state.interrupts] == [QUESTION], f"interrupts: {state.interrupts!r}")
    child = state.tasks[0].state
    expect(isinstance(child, StateSnapshot), f"the subgraph task's state: {child!r}")
    expect(child.next == ("question",), f"the subgraph's next: {child.next!r}")
    expect(child.values.get("log") == ["first", "second"], f"the subgraph's values: {child.values!r}")
    expect(child.metadata.get("step") is not None and child.created_at, f"subgraph snapshot: {child!r}")
    history = list(nested.get_state_history(cfg))
    expect(len(history) >= 1 and history[0].next == ("inner",), f"history: {[(h.next, h.metadata.get('step')) for h in history]!r}")


def stream_resumes_with_subgraphs():
    cfg = config()
    nested.invoke({"ask": True}, cfg)
    parts = list(nested.stream(Command(resume="yes"), cfg, stream_mode="updates", subgraphs=True))
    expect(all(len(p) == 2 for p in parts), f"parts: {parts!r}")
    namespaces = {ns for ns, _ in parts}
    expect(any(ns and ns[0].startswith("inner") for ns in namespaces), f"namespaces: {namespaces!r}")
    inner_nodes = {node for ns, update in parts if ns for node in update}
    expect("question" in inner_nodes, f"the subgraph's updates: {parts!r}")
    expect(any(not ns and "inner" in update for ns, update in parts), f"the parent's update: {parts!r}")
    values = nested.get_state(cfg).values
    expect(values.get("answer") == "yes" and values.get("log") == ["first", "second", "answered"], f"values: {values!r}")
    modes = list(job.stream({"ask": False}, config(), stream_mode=["values", "updates"]))
    # Several modes come as the SDK's stream parts: (event, data, ..).
    expect({part[0] for part in modes} == {"values", "updates"}, f"modes: {modes!r}")


class Parent(TypedDict, total=False):
    """A local graph's state: the served graph's keys and one it does not have."""

    ask: bool
    delay_ms: int
    log: list[str]
    count: int
    answer: Optional[str]
    note: str


def parent_graph(remote):
    graph = StateGraph(Parent)
    graph.add_node("remote", remote)
    graph.add_edge(START, "remote")
    graph.add_edge("remote", END)
    return graph.compile(checkpointer=InMemorySaver())


def as_a_node():
    app = parent_graph(job)
    out = app.invoke({"ask": False, "note": "mine"}, config())
    expect(out.get("log") == ["first", "second"] and out.get("count") == 2, f"output: {out!r}")
    expect(out.get("note") == "mine", f"the parent's own key: {out!r}")


def as_a_node_pausing():
    app = parent_graph(job)
    cfg = config()
    out = app.invoke({"ask": True, "note": "mine"}, cfg)
    expect("__interrupt__" in out, f"no __interrupt__ in the parent's output: {out!r}")
    expect([i.value for i in out["__interrupt__"]] == [QUESTION], f"interrupt: {out['__interrupt__']!r}")
    state = app.get_state(cfg)
    expect(state.next == ("remote",), f"the parent waits at the remote node: {state!r}")


check("invoke pauses at an interrupt: __interrupt__ in the output (v1 and v2)", invoke_pauses)
check("get_state(subgraphs=True): the paused subgraph's own snapshot; history", state_with_subgraphs)
check("stream(Command(resume), subgraphs=True): the subgraph's updates, namespaced", stream_resumes_with_subgraphs)
check("as a node of a local graph whose state has a key the served graph lacks", as_a_node)
check("as a node: the served graph's interrupt pauses the local graph", as_a_node_pausing)
sys.exit(1 if failures else 0)
