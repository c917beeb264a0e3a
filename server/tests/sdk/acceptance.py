"""Drives a stategraph server with LangGraph's own Python client, `langgraph-sdk`.

Usage: python acceptance.py [--langgraph] <base_url> [<keyed_url> <api_key>]

`keyed_url` is a second server of the same graph that requires `api_key`. `--langgraph`
skips the checks of what stategraph's server promises beyond LangGraph's (typed input,
refused options), to run the same script against LangGraph's own server.

Only the SDK's client methods are used (`get_client`, `get_sync_client`): no request is
built by hand, so whatever passes here works for any program written against the SDK.
The server must serve the `research` graph of `stategraph-examples`.

Every check prints one line (`ok` or `FAIL`) and the script goes on after a failure, so
one run reports every mismatch; it exits 1 if any check failed.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
import traceback
import uuid
from datetime import datetime, timezone
from pathlib import Path

import httpx
from langgraph_sdk import get_client, get_sync_client
from langchain_core.messages import convert_to_messages
from langgraph_sdk.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)

GRAPH = "research"
TOPIC = "Should a small team move its backend services to Rust?"
# Every research angle of the example graph, and the nodes a full run passes through.
ANGLES = ["performance", "ecosystem", "migration", "hiring"]
NODES = {"plan", "research", "write", "review"}
# Threads and store items of this run carry this tag, so reruns against one server do not
# see each other's data.
TAG = uuid.uuid4().hex[:12]
CHECK_TIMEOUT = 60.0
# Checks of what stategraph's server documents beyond LangGraph's (`--langgraph` turns them off).
STATEGRAPH = True

failures: list[str] = []


class CheckFailed(Exception):
    """A check's expectation did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def short(value: object, limit: int = 300) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "…"


def describe(error: BaseException) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        body = error.response.text if error.response is not None else ""
        status = error.response.status_code if error.response is not None else "?"
        return f"{type(error).__name__}: HTTP {status} {short(body)}"
    if isinstance(error, CheckFailed):
        return str(error)
    lines = traceback.format_exception_only(type(error), error)
    return "".join(lines).strip()


async def check(name: str, body) -> object:
    """Runs one check; prints its outcome; returns its result, or None if it failed."""
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(body(), CHECK_TIMEOUT)
    except BaseException as error:  # noqa: BLE001 - every failure is reported, then the next check runs
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        failures.append(name)
        if isinstance(error, asyncio.TimeoutError):
            reason = f"no answer within {CHECK_TIMEOUT:.0f}s"
        else:
            reason = describe(error)
        print(f"FAIL {name}: {reason}", flush=True)
        return None
    print(f"ok   {name} ({time.monotonic() - started:.2f}s)", flush=True)
    return result if result is not None else True


def http_status(error: BaseException) -> int | None:
    if isinstance(error, httpx.HTTPStatusError) and error.response is not None:
        return error.response.status_code
    return None


async def expect_status(call, statuses: range | set[int], what: str) -> httpx.HTTPStatusError:
    """Awaits `call()`, which must fail with an HTTP status in `statuses`."""
    try:
        result = await call()
    except httpx.HTTPStatusError as error:
        expect(
            http_status(error) in statuses,
            f"{what}: expected HTTP {statuses}, got {describe(error)}",
        )
        return error
    raise CheckFailed(f"{what}: expected an HTTP error, got a success: {short(result)}")


def missing_keys(wanted: set[str], items: list[dict], what: str) -> None:
    """Every item must have every key in `wanted`."""
    for item in items:
        lacking = sorted(wanted - set(item))
        expect(not lacking, f"a {what} lacks {lacking}: {short(item)}")


def error_text(error: httpx.HTTPStatusError) -> str:
    return error.response.text if error.response is not None else str(error)


async def wait_run(client, thread_id: str, run_id: str, done: set[str], timeout: float = 30.0):
    """Polls `runs.get` until the run's status is one of `done`; returns the run."""
    deadline = time.monotonic() + timeout
    while True:
        run = await client.runs.get(thread_id, run_id)
        if run["status"] in done:
            return run
        if time.monotonic() > deadline:
            raise CheckFailed(f"run {run_id} still {run['status']!r} after {timeout:.0f}s")
        await asyncio.sleep(0.1)


async def wait_thread_busy(client, thread_id: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (await client.threads.get(thread_id))["status"] != "busy":
        if time.monotonic() > deadline:
            raise CheckFailed(f"thread {thread_id} never became busy")
        await asyncio.sleep(0.05)


async def new_thread(client, kind: str) -> str:
    thread = await client.threads.create(metadata={"suite": TAG, "kind": kind})
    return thread["thread_id"]


async def cutting_proxy(target: str, cut_after: int):
    """A TCP proxy to `target` whose first connection is cut after `cut_after` bytes of
    response (a dropped connection in the middle of a stream); later ones pass whole.
    Returns the server, its URL, and its count of connections."""
    host, port = target.split("//", 1)[1].split(":")
    connections = {"seen": 0}

    async def pipe(reader, writer, limit):
        sent = 0
        try:
            while limit is None or sent < limit:
                chunk = await reader.read(min(4096, limit - sent) if limit is not None else 4096)
                if not chunk:
                    break
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer):
        first = connections["seen"] == 0
        connections["seen"] += 1
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        upstream = asyncio.ensure_future(pipe(client_reader, up_writer, None))
        await pipe(up_reader, client_writer, cut_after if first else None)
        upstream.cancel()
        up_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    proxy_port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{proxy_port}", connections


async def main(url: str, keyed: tuple[str, str] | None) -> int:
    client = get_client(url=url, api_key=None)
    state: dict[str, object] = {"assistant": GRAPH}

    # ---------------------------------------------------------------- assistants
    async def assistants_search():
        found = await client.assistants.search(graph_id=GRAPH)
        expect(isinstance(found, list) and found, f"search(graph_id) returned {short(found)}")
        expect(
            all(a["graph_id"] == GRAPH for a in found),
            f"search(graph_id={GRAPH!r}) returned other graphs: {short(found)}",
        )
        for key in ("assistant_id", "graph_id", "config", "metadata", "created_at", "updated_at", "version", "name"):
            expect(key in found[0], f"assistant has no `{key}`: {short(found[0])}")
        every = await client.assistants.search()
        expect(
            any(a["assistant_id"] == found[0]["assistant_id"] for a in every),
            f"search() without filters misses {found[0]['assistant_id']}: {short(every)}",
        )
        state["assistant"] = found[0]["assistant_id"]

    await check("assistants.search lists the research graph", assistants_search)
    aid = str(state["assistant"])

    async def assistants_get():
        assistant = await client.assistants.get(aid)
        expect(assistant["assistant_id"] == aid, f"get returned {short(assistant)}")
        expect(assistant["graph_id"] == GRAPH, f"get returned graph {assistant.get('graph_id')!r}")

    await check("assistants.get", assistants_get)

    async def assistants_graph():
        graph = await client.assistants.get_graph(aid)
        ids = {node["id"] for node in graph["nodes"]}
        expect(NODES | {"approve", "publish"} <= ids, f"graph nodes are {sorted(ids)}")
        pairs = {(edge["source"], edge["target"]) for edge in graph["edges"]}
        expect(("write", "review") in pairs, f"graph has no write → review edge: {sorted(pairs)}")

    await check("assistants.get_graph has every node and edge", assistants_graph)

    async def assistants_schemas():
        schemas = await client.assistants.get_schemas(aid)
        expect(schemas.get("graph_id") == GRAPH, f"schemas graph_id: {schemas.get('graph_id')!r}")
        for key in ("input_schema", "output_schema", "state_schema", "config_schema", "context_schema"):
            expect(key in schemas, f"schemas have no `{key}`: {short(schemas)}")
        expect(
            "topic" in json.dumps(schemas.get("state_schema")),
            f"state_schema does not describe `topic`: {short(schemas.get('state_schema'))}",
        )
        expect(
            "topic" in json.dumps(schemas.get("input_schema")),
            f"input_schema does not describe `topic`: {short(schemas.get('input_schema'))}",
        )

    await check("assistants.get_schemas describes the state", assistants_schemas)

    async def assistants_lifecycle():
        made = await client.assistants.create(
            GRAPH, config={"configurable": {"tone": "terse"}}, metadata={"suite": TAG}, name="terse research"
        )
        mid = made["assistant_id"]
        expect(made["version"] == 1 and made["name"] == "terse research", f"create: {short(made)}")
        again = await client.assistants.create(GRAPH, assistant_id=mid, if_exists="do_nothing")
        expect(again["assistant_id"] == mid and again["version"] == 1, f"create(if_exists=do_nothing): {short(again)}")
        await expect_status(lambda: client.assistants.create(GRAPH, assistant_id=mid), {409}, "an assistant id taken")
        await expect_status(lambda: client.assistants.create("nowhere"), {404}, "an assistant of a graph not served")
        await expect_status(
            lambda: client.assistants.create(GRAPH, config={"callbacks": []}), {422}, "an assistant config field not taken"
        )
        found = await client.assistants.search(metadata={"suite": TAG})
        expect([a["assistant_id"] for a in found] == [mid], f"search(metadata): {short(found)}")
        changed = await client.assistants.update(mid, metadata={"tier": "gold"}, description="second")
        expect(changed["version"] == 2 and changed["metadata"].get("suite") == TAG, f"update: {short(changed)}")
        versions = await client.assistants.get_versions(mid)
        expect([v["version"] for v in versions] == [2, 1], f"get_versions: {short(versions)}")
        back = await client.assistants.set_latest(mid, 1)
        expect(back["version"] == 1 and "tier" not in back["metadata"], f"set_latest(1): {short(back)}")
        thread = await new_thread(client, "assistant")
        out = await client.runs.wait(thread, mid, input={"topic": TOPIC})
        expect(out.get("topic") == TOPIC, f"a run of the made assistant: {short(out)}")
        runs = await client.runs.list(thread)
        expect(runs[0]["assistant_id"] == mid, f"the run's assistant: {short(runs[0])}")
        expect(
            runs[0]["kwargs"]["config"]["configurable"].get("tone") == "terse",
            f"the run did not start from the assistant's config: {short(runs[0]['kwargs'])}",
        )
        await expect_status(lambda: client.assistants.update(aid, name="renamed"), {409}, "updating a system assistant")
        await client.assistants.delete(mid, delete_threads=True)
        await expect_status(lambda: client.assistants.get(mid), {404}, "a deleted assistant")
        await expect_status(lambda: client.threads.get(thread), {404}, "a deleted assistant's thread")

    await check("assistants create, update (versions), set_latest, run, delete with threads", assistants_lifecycle)

    async def subgraphs():
        listed = await client.assistants.get_subgraphs(aid, recurse=True)
        expect(isinstance(listed, dict), f"get_subgraphs: {short(listed)}")
        expect(await client.assistants.get_subgraphs(aid, namespace="no-such-node") == {}, "an unknown namespace")

    await check("assistants.get_subgraphs answers by namespace", subgraphs)

    # ---------------------------------------------------------------- threads
    async def threads_create():
        thread = await client.threads.create(metadata={"suite": TAG, "kind": "main"})
        expect(thread["status"] == "idle", f"new thread status {thread.get('status')!r}")
        expect(thread["metadata"].get("suite") == TAG, f"metadata not kept: {short(thread)}")
        state["main"] = thread["thread_id"]
        again = await client.threads.create(thread_id=thread["thread_id"], if_exists="do_nothing")
        expect(again["thread_id"] == thread["thread_id"], f"do_nothing returned {short(again)}")
        await expect_status(
            lambda: client.threads.create(thread_id=thread["thread_id"], if_exists="raise"),
            {409},
            "create of an existing thread with if_exists=raise",
        )
        got = await client.threads.get(thread["thread_id"])
        expect(got["thread_id"] == thread["thread_id"], f"get returned {short(got)}")

    await check("threads.create / get, if_exists do_nothing and raise", threads_create)
    tid = str(state.get("main", uuid.uuid4()))

    async def stream_run():
        parts = []
        async for part in client.runs.stream(
            tid, aid, input={"topic": TOPIC}, stream_mode=["values", "updates", "custom"]
        ):
            parts.append(part)
            if part.event == "custom" and "status_while_streaming" not in state:
                state["status_while_streaming"] = (await client.threads.get(tid))["status"]
        state["stream"] = parts
        expect(parts, "the stream had no events")
        first = parts[0]
        expect(first.event == "metadata", f"first event is {first.event!r}, not `metadata`")
        expect(isinstance(first.data, dict) and first.data.get("run_id"), f"metadata data: {short(first.data)}")
        names = {p.event for p in parts}
        expect(
            names <= {"metadata", "values", "updates", "custom", "end"},
            f"unexpected event names: {sorted(names)}",
        )
        expect("error" not in names, f"the run failed: {short([p.data for p in parts if p.event == 'error'])}")
        seen = state.get("status_while_streaming")
        expect(seen == "busy", f"thread status while the run streamed: {seen!r}, want busy")

    await check("runs.stream with stream_mode [values, updates, custom]", stream_run)
    parts = state.get("stream") or []

    async def stream_custom():
        custom = [p.data for p in parts if p.event == "custom"]
        expect(custom and all(isinstance(c, str) for c in custom), f"custom events: {short(custom)}")
        expect(any(c.startswith("split ") for c in custom), f"no `split` event from plan: {short(custom)}")
        for angle in ANGLES:
            expect(f"[{angle}] searching" in custom, f"no `[{angle}] searching` event: {short(custom)}")

    await check("stream: custom string events from the nodes", stream_custom)

    async def stream_updates():
        updates = [p.data for p in parts if p.event == "updates"]
        nodes = [key for u in updates for key in u]
        expect(NODES <= set(nodes), f"updates came from {sorted(set(nodes))}")
        expect(nodes.count("research") >= len(ANGLES) + 1, f"{nodes.count('research')} research updates, want one per task")
        plan = next(u["plan"] for u in updates if "plan" in u)
        expect(len(plan.get("questions", [])) == len(ANGLES), f"plan's update: {short(plan)}")
        expect(
            any("__interrupt__" in u for u in updates) or any(
                "__interrupt__" in p.data for p in parts if p.event == "values" and isinstance(p.data, dict)
            ),
            "no `__interrupt__` in the updates or values events",
        )

    await check("stream: one update per node task, and the interrupt", stream_updates)

    async def stream_values():
        values = [p.data for p in parts if p.event == "values"]
        expect(values, "no values events")
        odd = [v for v in values if v.get("topic") != TOPIC]
        expect(not odd, f"{len(odd)} of {len(values)} values events without the topic, e.g. {short(odd[:1])}")
        expect(values[-1].get("draft"), f"last values have no draft: {short(values[-1])}")

    await check("stream: values carry the topic and the draft", stream_values)

    async def at_interrupt():
        thread = await client.threads.get(tid)
        expect(thread["status"] == "interrupted", f"thread status {thread['status']!r}, want interrupted")
        expect(thread.get("interrupts"), f"thread.interrupts is empty: {short(thread.get('interrupts'))}")
        snapshot = await client.threads.get_state(tid)
        expect(list(snapshot["next"]) == ["approve"], f"state.next = {snapshot['next']!r}")
        interrupts = snapshot["interrupts"]
        expect(len(interrupts) == 1, f"state.interrupts = {short(interrupts)}")
        value = interrupts[0]["value"]
        expect(value.get("question") == "publish this report?", f"interrupt value {short(value)}")
        expect(value.get("draft") == snapshot["values"]["draft"], "interrupt's draft is not the state's draft")
        expect(interrupts[0].get("id"), f"interrupt has no id: {short(interrupts[0])}")
        tasks = [t for t in snapshot["tasks"] if t["name"] == "approve"]
        expect(tasks and tasks[0]["interrupts"], f"no approve task with its interrupt: {short(snapshot['tasks'])}")
        state["interrupted_checkpoint"] = snapshot["checkpoint"]["checkpoint_id"]

    await check("thread is interrupted at approve, with the interrupt in its state", at_interrupt)

    async def resume():
        events = []
        async for part in client.runs.stream(
            tid, aid, command={"resume": {"decision": "publish"}}, stream_mode="updates"
        ):
            events.append(part)
        nodes = [key for p in events if p.event == "updates" for key in p.data]
        expect("publish" in nodes, f"resume ran {nodes}, not publish")
        snapshot = await client.threads.get_state(tid)
        values = snapshot["values"]
        expect(isinstance(values.get("report"), str) and values["report"], f"report is {short(values.get('report'))}")
        expect(values.get("verdict") == {"decision": "publish"}, f"verdict is {short(values.get('verdict'))}")
        expect(list(snapshot["next"]) == [], f"next after publishing: {snapshot['next']!r}")
        thread = await client.threads.get(tid)
        expect(thread["status"] == "idle", f"thread status {thread['status']!r} after the run finished")

    await check("resume with command={'resume': {'decision': 'publish'}} publishes", resume)

    async def history():
        states = await client.threads.get_history(tid, limit=100)
        expect(len(states) >= 6, f"only {len(states)} checkpoints in the history")
        latest = await client.threads.get_state(tid)
        expect(
            states[0]["checkpoint"]["checkpoint_id"] == latest["checkpoint"]["checkpoint_id"],
            "history[0] is not the latest checkpoint",
        )
        steps = [s["metadata"]["step"] for s in states if s.get("metadata") and "step" in s["metadata"]]
        expect(steps == sorted(steps, reverse=True) and len(steps) == len(states), f"steps not newest first: {steps}")
        for newer, older in zip(states, states[1:]):
            expect(
                newer["parent_checkpoint"] and newer["parent_checkpoint"]["checkpoint_id"] == older["checkpoint"]["checkpoint_id"],
                f"parent of {newer['checkpoint']['checkpoint_id']} is not the next entry",
            )
        expect(states[-1]["parent_checkpoint"] is None, f"oldest checkpoint has a parent: {short(states[-1]['parent_checkpoint'])}")
        limited = await client.threads.get_history(tid, limit=2)
        expect(len(limited) == 2, f"limit=2 returned {len(limited)}")
        # LangGraph's server takes `before` as a run config (`{"configurable": {...}}`),
        # neither the id string nor the checkpoint object the SDK's type names.
        before = await client.threads.get_history(
            tid, limit=100, before={"configurable": {"checkpoint_id": states[1]["checkpoint"]["checkpoint_id"]}}
        )
        expect(
            [s["checkpoint"]["checkpoint_id"] for s in before]
            == [s["checkpoint"]["checkpoint_id"] for s in states[2:]],
            "before={configurable: {checkpoint_id}} does not return exactly the older checkpoints",
        )
        state["history"] = states

    await check("threads.get_history: every checkpoint, newest first", history)

    async def state_by_checkpoint():
        wanted = state.get("interrupted_checkpoint")
        expect(wanted, "no checkpoint id saved at the interrupt")
        old = await client.threads.get_state(tid, checkpoint_id=wanted)
        expect(old["checkpoint"]["checkpoint_id"] == wanted, f"got checkpoint {short(old['checkpoint'])}")
        expect(list(old["next"]) == ["approve"], f"next at that checkpoint: {old['next']!r}")
        expect(old["values"].get("report") is None, "the old checkpoint already has a report")
        by_dict = await client.threads.get_state(tid, checkpoint=old["checkpoint"])
        expect(by_dict["checkpoint"]["checkpoint_id"] == wanted, "POST state/checkpoint returned another checkpoint")
        nested = await client.threads.get_state(tid, subgraphs=True)
        expect(nested["values"].get("report"), "get_state(subgraphs=True) lost the values")

    await check("threads.get_state by checkpoint id / checkpoint / subgraphs", state_by_checkpoint)

    async def update_state():
        response = await client.threads.update_state(tid, {"feedback": ["checked by the sdk"]}, as_node="publish")
        expect(response.get("checkpoint", {}).get("checkpoint_id"), f"update_state returned {short(response)}")
        snapshot = await client.threads.get_state(tid)
        expect(
            snapshot["checkpoint"]["checkpoint_id"] == response["checkpoint"]["checkpoint_id"],
            "the latest checkpoint is not the one update_state returned",
        )
        expect(snapshot["values"]["feedback"][-1:] == ["checked by the sdk"], f"feedback is {snapshot['values']['feedback']}")
        expect(snapshot["values"].get("report"), "update_state lost the report")
        expect(snapshot["metadata"].get("source") == "update", f"checkpoint source {snapshot['metadata'].get('source')!r}")

    await check("threads.update_state appends through the reducer", update_state)

    async def update_metadata():
        thread = await client.threads.update(tid, metadata={"reviewed": True})
        expect(thread["metadata"].get("reviewed") is True, f"update returned {short(thread)}")
        got = await client.threads.get(tid)
        expect(got["metadata"].get("suite") == TAG and got["metadata"].get("reviewed") is True,
               f"metadata after the patch: {short(got['metadata'])}")

    await check("threads.update patches the metadata", update_metadata)

    async def search_threads():
        found = await client.threads.search(metadata={"suite": TAG, "kind": "main"})
        expect([t["thread_id"] for t in found] == [tid], f"search found {[t['thread_id'] for t in found]}")
        idle = await client.threads.search(metadata={"suite": TAG}, status="idle", limit=100)
        expect(tid in [t["thread_id"] for t in idle], "search(status=idle) misses the finished thread")
        none = await client.threads.search(metadata={"suite": TAG, "kind": "no such kind"})
        expect(none == [], f"search for a missing kind found {short(none)}")
        count = await client.threads.count(metadata={"suite": TAG, "kind": "main"})
        expect(count == 1, f"threads.count: {count!r}")
        graphs = await client.assistants.count(graph_id=GRAPH)
        expect(graphs >= 1, f"assistants.count: {graphs!r}")

    await check("threads.search by metadata and status; threads / assistants count", search_threads)

    async def copy_thread():
        copied = await client.threads.copy(tid)
        expect(isinstance(copied, dict) and copied.get("thread_id"), f"copy returned {short(copied)}")
        other = copied["thread_id"]
        expect(other != tid, "the copy has the same id")
        original = await client.threads.get_state(tid)
        duplicate = await client.threads.get_state(other)
        expect(duplicate["values"] == original["values"], "the copy's values differ")
        old_history = await client.threads.get_history(tid, limit=100)
        new_history = await client.threads.get_history(other, limit=100)
        expect(len(new_history) == len(old_history), f"copy has {len(new_history)} checkpoints, original {len(old_history)}")
        await client.threads.delete(other)
        await expect_status(lambda: client.threads.get(other), {404}, "get of the deleted copy")
        still = await client.threads.get(tid)
        expect(still["thread_id"] == tid, "deleting the copy touched the original")

    await check("threads.copy then delete the copy", copy_thread)

    # ---------------------------------------------------------------- background runs
    # From here on every check works on threads of its own: they run at once, as
    # many clients of one server do (the server's workers take their runs in turn).
    # The few that use the first thread (`tid`) run after them, one by one.
    pending = []
    on_tid = []

    async def cancel():
        thread = await new_thread(client, "cancel")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC})
        expect(run["status"] in ("pending", "running"), f"new run status {run['status']!r}")
        await wait_thread_busy(client, thread)
        await asyncio.sleep(0.4)
        await client.runs.cancel(thread, run["run_id"], wait=True)
        got = await client.runs.get(thread, run["run_id"])
        expect(got["status"] == "interrupted", f"cancelled run status {got['status']!r}")
        status = (await client.threads.get(thread))["status"]
        expect(status != "busy", "the thread is still busy after the cancel")

    pending.append(check("runs.cancel(wait=True) interrupts a background run", cancel))

    async def cancel_no_wait():
        thread = await new_thread(client, "cancel-nowait")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        await client.runs.cancel(thread, run["run_id"])
        got = await wait_run(client, thread, run["run_id"], {"interrupted", "success", "error"})
        expect(got["status"] == "interrupted", f"cancelled run status {got['status']!r}")

    pending.append(check("runs.cancel (no wait) interrupts a background run", cancel_no_wait))

    async def join():
        thread = await new_thread(client, "join")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC}, metadata={"by": "sdk"})
        for key in ("run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata", "multitask_strategy"):
            expect(key in run, f"run has no `{key}`: {short(run)}")
        expect(run["thread_id"] == thread, f"run thread_id {run['thread_id']!r}")
        values = await client.runs.join(thread, run["run_id"])
        expect(values.get("topic") == TOPIC and values.get("draft"), f"join returned {short(values)}")
        got = await client.runs.get(thread, run["run_id"])
        expect(got["status"] == "success", f"joined run status {got['status']!r}")
        listed = await client.runs.list(thread)
        expect([r["run_id"] for r in listed] == [run["run_id"]], f"runs.list: {short(listed)}")
        await client.runs.delete(thread, run["run_id"])
        await expect_status(lambda: client.runs.get(thread, run["run_id"]), {404}, "get of a deleted run")

    pending.append(check("runs.create then runs.join returns the final values; list, delete", join))

    async def join_stream():
        thread = await new_thread(client, "join-stream")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC}, stream_mode=["values", "custom"])
        parts = []
        async for part in client.runs.join_stream(thread, run["run_id"]):
            parts.append(part)
        names = [p.event for p in parts]
        expect("error" not in names, f"join_stream error: {short([p.data for p in parts if p.event == 'error'])}")
        custom = [p.data for p in parts if p.event == "custom"]
        expect(any(isinstance(c, str) and c.startswith("draft ") for c in custom),
               f"joined stream misses write's custom event: {short(custom)}")
        values = [p.data for p in parts if p.event == "values"]
        expect(values and values[-1].get("draft"), f"joined stream's last values: {short(values[-1:] )}")
        got = await client.runs.get(thread, run["run_id"])
        expect(got["status"] == "success", f"run status after join_stream: {got['status']!r}")

    pending.append(check("runs.join_stream follows a running run to its end", join_stream))

    async def join_stream_modes():
        # The run streams values and updates; a join asking for updates gets those alone.
        thread = await new_thread(client, "join-stream-modes")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC}, stream_mode=["values", "updates"])
        parts = []
        async for part in client.runs.join_stream(thread, run["run_id"], stream_mode=["updates"]):
            parts.append(part)
        nodes = [key for p in parts if p.event == "updates" for key in p.data]
        expect("review" in nodes, f"joined updates came from {nodes}")
        others = {p.event for p in parts} - {"metadata", "updates", "end"}
        expect(not others, f"a join for updates also sent {others}")
        every = [p.event async for p in client.runs.join_stream(thread, run["run_id"], last_event_id="-1")]
        expect("values" in every, f"the run's own stream: {sorted(set(every))}")

    pending.append(check("runs.join_stream with stream_mode", join_stream_modes))

    async def resume_stream():
        thread = await new_thread(client, "resumable")
        run = await client.runs.create(
            thread, aid, input={"topic": TOPIC}, stream_mode=["custom"], stream_resumable=True
        )
        first = []
        async for part in client.runs.join_stream(thread, run["run_id"]):
            first.append(part)
        custom = [p for p in first if p.event == "custom"]
        expect(len(custom) >= 10, f"only {len(custom)} custom events")
        expect(all(p.id for p in custom), f"events without ids: {[p.id for p in custom][:5]}")
        # Reconnect after the fifth custom event, as a client that lost its connection does.
        cut = custom[4]
        again = []
        async for part in client.runs.join_stream(thread, run["run_id"], last_event_id=cut.id):
            again.append(part)
        rest = [(p.event, p.data) for p in again if p.event == "custom"]
        want = [(p.event, p.data) for p in custom[5:]]
        expect(rest == want, f"after Last-Event-ID {cut.id}: {short(rest[:3])}…, want {short(want[:3])}…")

    pending.append(check("runs.join_stream with last_event_id replays what came after", resume_stream))

    async def wait():
        thread = await new_thread(client, "wait")
        values = await client.runs.wait(thread, aid, input={"topic": TOPIC})
        expect(isinstance(values, dict) and values.get("topic") == TOPIC, f"wait returned {short(values)}")
        expect(values.get("draft") and values.get("report") is None, f"wait values: {short(values)}")
        expect("__interrupt__" in values, "wait's result does not carry `__interrupt__` for a paused run")
        done = await client.runs.wait(thread, aid, command={"resume": {"decision": "reject"}})
        expect(done.get("verdict") == {"decision": "reject"} and done.get("report") is None,
               f"wait after reject: {short(done)}")

    pending.append(check("runs.wait returns the values (paused, then rejected)", wait))

    async def stateless_wait():
        values = await client.runs.wait(None, aid, input={"topic": "stateless " + TAG})
        expect(isinstance(values, dict) and values.get("topic") == "stateless " + TAG, f"wait returned {short(values)}")
        expect(values.get("draft"), f"stateless run made no draft: {short(values)}")

    pending.append(check("stateless runs.wait (thread_id=None)", stateless_wait))

    async def stateless_stream():
        parts = []
        async for part in client.runs.stream(None, aid, input={"topic": "stateless " + TAG}, stream_mode="updates"):
            parts.append(part)
        expect(parts and parts[0].event == "metadata", f"first event: {parts[0].event if parts else None!r}")
        nodes = [key for p in parts if p.event == "updates" for key in p.data]
        expect(NODES <= set(nodes), f"stateless updates came from {sorted(set(nodes))}")

    pending.append(check("stateless runs.stream (thread_id=None)", stateless_stream))

    async def stateless_threads():
        made: list[dict] = []
        kept = await client.runs.wait(
            None, aid, input={"topic": "kept " + TAG}, on_completion="keep", on_run_created=made.append
        )
        expect(kept.get("draft"), f"stateless run with on_completion=keep: {short(kept)}")
        expect(made and made[0].get("thread_id"), f"on_run_created got {made} (from Content-Location)")
        thread = await client.threads.get(made[0]["thread_id"])
        expect(thread["values"].get("topic") == "kept " + TAG, f"the kept thread: {short(thread)}")
        made.clear()
        await client.runs.wait(None, aid, input={"topic": "dropped " + TAG}, on_run_created=made.append)
        expect(made and made[0].get("thread_id"), f"on_run_created got {made}")
        await expect_status(lambda: client.threads.get(made[0]["thread_id"]), {404}, "the temporary thread of a stateless run")

    pending.append(check("stateless runs: on_completion keep / delete (default) the thread", stateless_threads))

    async def batch_and_cancel_many():
        topics = ["batch a " + TAG, "batch b " + TAG]
        runs = await client.runs.create_batch(
            [{"assistant_id": aid, "input": {"topic": t}, "on_completion": "keep"} for t in topics]
        )
        expect(isinstance(runs, list) and len(runs) == 2, f"create_batch returned {short(runs)}")
        expect(len({r["thread_id"] for r in runs}) == 2, f"batch runs share a thread: {short(runs)}")
        for run, topic in zip(runs, topics):
            values = await client.runs.join(run["thread_id"], run["run_id"])
            expect(values.get("topic") == topic, f"batch run for {topic!r} ended with {short(values)}")
        thread = await new_thread(client, "cancel-many")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        await client.runs.cancel_many(thread_id=thread, run_ids=[run["run_id"]])
        got = await wait_run(client, thread, run["run_id"], {"interrupted", "success", "error"})
        expect(got["status"] == "interrupted", f"run after cancel_many: {got['status']!r}")

    pending.append(check("runs.create_batch (stateless) and runs.cancel_many", batch_and_cancel_many))

    async def task_modes():
        thread = await new_thread(client, "task-modes")
        parts = []
        async for part in client.runs.stream(thread, aid, input={"topic": TOPIC}, stream_mode=["tasks", "checkpoints", "debug"]):
            parts.append(part)
        names = {p.event for p in parts}
        expect({"tasks", "checkpoints", "debug"} <= names, f"event names: {sorted(names)}")
        tasks = [p.data for p in parts if p.event == "tasks"]
        starts = [t for t in tasks if "input" in t]
        results = [t for t in tasks if "result" in t]
        expect(starts and results, f"{len(starts)} task starts, {len(results)} task results")
        missing_keys({"id", "name", "input", "triggers"}, starts, "task start")
        missing_keys({"id", "name", "error", "interrupts", "result"}, results, "task result")
        expect(sum(1 for t in starts if t["name"] == "research") == len(ANGLES) + 1, "one task start per research task")
        research = next(t for t in starts if t["name"] == "research")
        expect(research["input"].get("id") in ANGLES, f"a research task's input is its Send payload: {short(research['input'])}")
        checkpoints = [p.data for p in parts if p.event == "checkpoints"]
        expect(checkpoints, "no checkpoints events")
        missing_keys({"config", "metadata", "values", "next", "parent_config", "tasks"}, checkpoints, "checkpoints event")
        expect(checkpoints[-1]["next"] == ["approve"], f"last checkpoint's next: {checkpoints[-1]['next']}")
        debug = [p.data for p in parts if p.event == "debug"]
        kinds = {d.get("type") for d in debug}
        expect({"checkpoint", "task", "task_result"} <= kinds, f"debug event types: {sorted(map(str, kinds))}")
        missing_keys({"step", "timestamp", "type", "payload"}, debug, "debug event")

    pending.append(check("stream modes tasks / checkpoints / debug carry the SDK's shapes", task_modes))

    async def run_options():
        # durability: "exit" saves one checkpoint for the whole run; the default, one per step.
        counts = {}
        for durability in (None, "exit"):
            thread = await new_thread(client, "durability")
            await client.runs.wait(thread, aid, input={"topic": TOPIC}, durability=durability)
            counts[durability] = len(await client.threads.get_history(thread, limit=100))
        expect(counts["exit"] == 1 and counts[None] > 2, f"checkpoints by durability: {counts}")
        # recursion_limit: the run stops with the recursion error.
        thread = await new_thread(client, "recursion")
        run = await client.runs.create(thread, aid, input={"topic": TOPIC}, config={"recursion_limit": 2})
        await client.runs.join(thread, run["run_id"])
        ended = await client.runs.get(thread, run["run_id"])
        expect(ended["status"] == "error", f"a run over its recursion limit: {short(ended)}")
        # An option the server does not know is refused, naming it, not dropped.
        try:
            await client.runs.create(thread, aid, input={"topic": TOPIC}, config={"callbacks": []})
        except UnprocessableEntityError as error:
            expect("callbacks" in error_text(error), f"the 422 does not name the field: {error_text(error)}")
        else:
            raise CheckFailed("an unknown config field was accepted")

    if STATEGRAPH:  # LangGraph accepts unknown config fields
        pending.append(check("run options: durability, recursion_limit; an unknown config field is a 422", run_options))

    async def listing_options():
        # Searches, counts and lists with the options a UI sends, effects asserted.
        every = await client.assistants.search()
        desc = await client.assistants.search(sort_by="graph_id", sort_order="desc", select=["graph_id"])
        expect([a["graph_id"] for a in desc] == sorted((a["graph_id"] for a in every), reverse=True), f"sorted desc: {short(desc)}")
        expect(all(set(a) == {"graph_id"} for a in desc), f"select graph_id: {short(desc)}")
        counted = await client.assistants.count(metadata={"created_by": "system"})
        expect(counted == len(every), f"count by metadata: {counted} of {len(every)}")
        expect(await client.assistants.count(metadata={"created_by": "nobody"}) == 0, "count of no match")
        thread = await new_thread(client, "listing")
        values = await client.runs.wait(thread, aid, input={"topic": TOPIC})
        expect(await client.threads.count(values={"topic": TOPIC}) >= 1, "threads.count by values")
        found = await client.threads.search(
            ids=[thread], sort_by="created_at", sort_order="asc", select=["thread_id", "status"],
            extract={"topic": "values.topic"},
        )
        expect(len(found) == 1 and set(found[0]) == {"thread_id", "status", "extracted"}, f"search select: {short(found)}")
        expect(found[0]["extracted"] == {"topic": values["topic"]}, f"extracted: {short(found[0])}")
        history = await client.threads.get_history(thread, limit=100)
        older = await client.threads.get_history(thread, limit=2, before=history[1]["checkpoint"])
        expect([h["checkpoint"]["checkpoint_id"] for h in older] == [h["checkpoint"]["checkpoint_id"] for h in history[2:4]], "history before")
        inputs = await client.threads.get_history(thread, metadata={"source": "input"})
        expect(inputs and all(h["metadata"]["source"] == "input" for h in inputs), f"history by metadata: {short(inputs)}")
        one = await client.threads.get_history(thread, checkpoint={"checkpoint_id": history[2]["checkpoint"]["checkpoint_id"]})
        expect(len(one) == 1 and one[0]["checkpoint"] == history[2]["checkpoint"], f"history at a checkpoint: {short(one)}")
        at = await client.threads.get_state(thread, checkpoint=history[2]["checkpoint"])
        expect(at["checkpoint"] == history[2]["checkpoint"], f"state at a checkpoint: {short(at['checkpoint'])}")
        runs = await client.runs.list(thread, status="success", select=["run_id", "status"])
        expect(len(runs) == 1 and set(runs[0]) == {"run_id", "status"}, f"runs.list status/select: {short(runs)}")
        expect(await client.runs.list(thread, status="error") == [], "runs.list status=error")

    if STATEGRAPH:
        pending.append(check("listing options: sort, select, extract, count filters, history before/metadata/checkpoint, runs.list", listing_options))

    async def run_shapes():
        # Where a run stops and how it is stopped.
        thread = await new_thread(client, "interrupt-after")
        await client.runs.wait(thread, aid, input={"topic": TOPIC}, interrupt_after=["plan"])
        paused = await client.threads.get_state(thread)
        expect(paused["next"] and set(paused["next"]) == {"research"}, f"interrupt_after plan: next {paused['next']}")
        thread = await new_thread(client, "checkpoint-during")
        await client.runs.wait(thread, aid, input={"topic": TOPIC}, checkpoint_during=False)
        expect(len(await client.threads.get_history(thread, limit=100)) == 1, "checkpoint_during=False saves once")
        thread = await new_thread(client, "rollback")
        doomed = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        await client.runs.cancel(thread, doomed["run_id"], wait=True, action="rollback")
        await expect_status(lambda: client.runs.get(thread, doomed["run_id"]), {404}, "a rolled-back run")
        expect(await client.threads.get_history(thread) == [], "a rolled-back first run leaves no checkpoint")
        thread = await new_thread(client, "cancel-pending")
        running = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        queued = [
            await client.runs.create(thread, aid, input={"topic": TOPIC}, multitask_strategy="enqueue")
            for _ in range(2)
        ]
        await client.runs.cancel_many(thread_id=thread, status="pending", action="interrupt")
        states = [(await client.runs.get(thread, r["run_id"]))["status"] for r in queued]
        expect(states == ["interrupted", "interrupted"], f"cancel_many status=pending: {states}")
        done = await wait_run(client, thread, running["run_id"], {"success", "error", "interrupted"})
        expect(done["status"] == "success", f"the running run: {done['status']}")
        # A streamed run whose client goes away with on_disconnect="cancel" stops.
        thread = await new_thread(client, "disconnect")
        async for part in client.runs.stream(thread, aid, input={"topic": TOPIC}, stream_mode="custom", on_disconnect="cancel"):
            if part.event == "custom":
                break
        runs = await client.runs.list(thread)
        deadline = time.monotonic() + 10
        while runs[0]["status"] in ("pending", "running") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            runs = await client.runs.list(thread)
        expect(runs[0]["status"] == "interrupted", f"on_disconnect=cancel: {runs[0]['status']}")

    if STATEGRAPH:
        pending.append(check("run shapes: interrupt_after, checkpoint_during, rollback, cancel_many by status, on_disconnect", run_shapes))

    async def store_options():
        ns = ["sdk-options", str(uuid.uuid4())]
        await client.store.put_item(ns, "plain", {"kind": "note", "text": "plain"}, index=False)
        await client.store.put_item(ns + ["deep"], "brief", {"kind": "brief"}, ttl=5)
        got = await client.store.get_item(ns + ["deep"], "brief", refresh_ttl=True)
        expect(got and got["value"] == {"kind": "brief"}, f"get_item(refresh_ttl): {short(got)}")
        notes = await client.store.search_items(ns, filter={"kind": "note"}, refresh_ttl=False)
        expect([i["key"] for i in notes["items"]] == ["plain"], f"search filter: {short(notes)}")
        await expect_status(lambda: client.store.search_items(ns, query="notes"), {422}, "a semantic query without an index")
        shallow = await client.store.list_namespaces(prefix=ns, max_depth=2)
        expect(shallow["namespaces"] == [ns], f"max_depth=2: {short(shallow)}")
        deep = await client.store.list_namespaces(suffix=["deep"])
        expect(ns + ["deep"] in deep["namespaces"], f"suffix: {short(deep)}")

    if STATEGRAPH:
        pending.append(check("store options: index, ttl, refresh_ttl, filter, query without index, max_depth, suffix", store_options))

    async def method_table():
        docs = (Path(__file__).resolve().parents[2] / "src" / "docs.md").read_text()
        listed = set(re.findall(r"^\| `(\w+\.\w+)` \|", docs, re.M))
        sdk = {
            f"{group}.{name}"
            for group in ("assistants", "threads", "runs", "crons", "store")
            for name in dir(getattr(client, group))
            if not name.startswith("_") and callable(getattr(getattr(client, group), name))
        }
        expect(not sdk - listed, f"SDK methods missing from the table in src/docs.md: {sorted(sdk - listed)}")
        expect(not listed - sdk, f"the table in src/docs.md names methods the SDK lacks: {sorted(listed - sdk)}")

    if STATEGRAPH:
        pending.append(check("the crate docs' method table lists every method of this SDK", method_table))

    async def thread_create_options():
        made = await client.threads.create(graph_id="research", metadata={"owner": "sdk"})
        expect(made["metadata"].get("graph_id") == "research" and made["metadata"].get("owner") == "sdk", f"created: {short(made)}")
        for options in ({"ttl": {"strategy": "shred", "ttl": 5}}, {"supersteps": [{"updates": [{"values": {}, "as_node": "__input__"}]}]}):
            try:
                await client.threads.create(**options)
            except UnprocessableEntityError as error:
                field = next(iter(options))
                expect(field in error_text(error), f"the 422 does not name `{field}`: {error_text(error)}")
            else:
                raise CheckFailed(f"threads.create accepted {short(options)} it does not serve")

    if STATEGRAPH:
        pending.append(check("threads.create: graph_id binds the thread; a bad ttl and supersteps are refused", thread_create_options))

    async def retention():
        doomed = await client.threads.create(graph_id=GRAPH, metadata={"suite": TAG, "kind": "ttl"}, ttl=0.02)
        kept = await client.threads.create(
            graph_id=GRAPH, metadata={"suite": TAG, "kind": "ttl"}, ttl={"ttl": 0.02, "strategy": "keep_latest"}
        )
        shown = await client.threads.get(kept["thread_id"], include=["ttl"])
        expect(shown.get("ttl", {}).get("strategy") == "keep_latest", f"threads.get(include=['ttl']): {short(shown)}")
        for _ in range(2):
            await client.runs.wait(kept["thread_id"], aid, input={"topic": TOPIC})
        deadline = time.monotonic() + 20
        while True:
            left = await client.threads.search(metadata={"suite": TAG, "kind": "ttl"})
            history = await client.threads.get_history(kept["thread_id"], limit=100)
            if [t["thread_id"] for t in left] == [kept["thread_id"]] and len(history) == 1:
                break
            if time.monotonic() > deadline:
                raise CheckFailed(f"after the ttl: {short(left)}, {len(history)} checkpoints kept")
            await asyncio.sleep(0.2)
        expect(all(t["thread_id"] != doomed["thread_id"] for t in left), "the expired thread is still there")
        a = await new_thread(client, "prune")
        b = await new_thread(client, "prune")
        for t in (a, b):
            await client.runs.wait(t, aid, input={"topic": TOPIC})
        out = await client.threads.prune([a], strategy="keep_latest")
        expect(out == {"pruned_count": 1}, f"threads.prune(keep_latest): {short(out)}")
        expect(len(await client.threads.get_history(a, limit=100)) == 1, "keep_latest kept more than one checkpoint")
        out = await client.threads.prune([a, b, str(uuid.uuid4())])
        expect(out == {"pruned_count": 2}, f"threads.prune: {short(out)}")
        await expect_status(lambda: client.threads.get(b), {404}, "a pruned thread")

    if STATEGRAPH:
        pending.append(check("threads ttl (delete, keep_latest), include=ttl, threads.prune", retention))

    async def cut_stream():
        # The stream is cut after 1500 bytes; the SDK reconnects through `Location` with
        # `Last-Event-ID`, and every event arrives exactly once.
        proxy, proxy_url, connections = await cutting_proxy(url, 1500)
        try:
            through = get_client(url=proxy_url, api_key=None)
            thread = await new_thread(client, "cut-stream")
            parts = [
                p
                async for p in through.runs.stream(
                    thread, aid, input={"topic": TOPIC},
                    stream_mode=["values", "updates", "custom"], stream_resumable=True,
                )
            ]
        finally:
            proxy.close()
        runs = await client.runs.list(thread)
        whole = [p async for p in client.runs.join_stream(thread, runs[0]["run_id"], last_event_id="-1")]
        got = [(p.event, json.dumps(p.data, sort_keys=True)) for p in parts]
        want = [(p.event, json.dumps(p.data, sort_keys=True)) for p in whole]
        expect(len(want) > 5, f"the run streamed only {len(want)} events")
        expect(connections["seen"] >= 2, f"the stream was not cut (connections: {connections['seen']})")
        expect(got == want, f"through the cut: {len(got)} events ({short([e for e, _ in got])}), the run's: {len(want)} ({short([e for e, _ in want])})")

    pending.append(check("a stream cut after 1500 bytes resumes through Location, every event once", cut_stream))

    async def thread_join_stream():
        # Joined from the start ("-1") before anything runs: both runs in order, each
        # ended by a `run_done`, then the state update; then resumed after the first end.
        thread = await new_thread(client, "thread-stream")
        modes = ["run_modes", "state_update"]

        async def watch(last_event_id):
            parts = []
            async for part in await client.threads.join_stream(thread, last_event_id=last_event_id, stream_mode=modes):
                parts.append(part)
                if part.event == "state_update":
                    return parts
            raise CheckFailed(f"the thread stream ended after {short([p.event for p in parts])}")

        watcher = asyncio.create_task(watch("-1"))
        runs = []
        for _ in range(2):
            run = await client.runs.create(thread, aid, input={"topic": TOPIC}, stream_mode=["updates"])
            await client.runs.join(thread, run["run_id"])
            runs.append(run["run_id"])
        await client.threads.update_state(thread, {"topic": "edited"})
        parts = await asyncio.wait_for(watcher, 30)
        ends = [p.data.get("run_id") for p in parts if p.event == "metadata" and p.data.get("status") == "run_done"]
        expect(ends == runs, f"run_done for {ends}, runs {runs}")
        nodes = [key for p in parts if p.event == "updates" for key in p.data]
        expect("review" in nodes, f"updates came from {nodes}")
        expect(parts[-1].data["state"]["values"]["topic"] == "edited", f"state_update: {short(parts[-1].data)}")
        first_end = next(i for i, p in enumerate(parts) if p.data == {"status": "run_done", "run_id": runs[0]})
        again = await asyncio.wait_for(watch(parts[first_end].id), 30)
        got = [(p.event, p.data) for p in again]
        want = [(p.event, p.data) for p in parts[first_end + 1:]]
        expect(got == want, f"resumed after {parts[first_end].id}: {short(got[:3])}…, want {short(want[:3])}…")

    if STATEGRAPH:
        pending.append(check("threads.join_stream: runs in order, the state update, resumed after an event", thread_join_stream))

    async def read_options():
        # Options of reads the SDK sends as query strings and headers: honoured, or a 422.
        flat = await client.assistants.get_graph(aid)
        deep = await client.assistants.get_graph(aid, xray=True)
        expect(not any("subgraph" in n for n in flat["nodes"]), f"xray=False drew subgraphs: {short(flat)}")
        expect({n["id"] for n in deep["nodes"]} == {n["id"] for n in flat["nodes"]}, "xray changed the nodes")
        page = await client.assistants.search(limit=1, response_format="object")
        expect(len(page["assistants"]) == 1 and page["next"] == "1", f"search page: {short(page)}")
        last = await client.assistants.search(limit=1, offset=10, response_format="object")
        expect(last["next"] is None, f"past the end: {short(last)}")
        thread = await new_thread(client, "read-options")
        await expect_status(lambda: client.threads.get(thread, include=["secrets"]), {422}, "threads.get(include=['secrets'])")
        quiet = await client.threads.update(thread, metadata={"quiet": True}, return_minimal=True)
        expect(quiet is None, f"return_minimal answered {short(quiet)}")
        got = await client.threads.get(thread)
        expect(got["metadata"].get("quiet") is True, f"metadata after update: {short(got['metadata'])}")
        await client.runs.wait(thread, aid, input={"topic": TOPIC})
        picked = await client.threads.get_state(thread, select=["values.topic", "next"])
        expect(set(picked) == {"values", "next"} and set(picked["values"]) == {"topic"}, f"select: {short(picked)}")
        await expect_status(lambda: client.threads.get_state(thread, select=["colour"]), {422}, "get_state(select=['colour'])")

    if STATEGRAPH:
        pending.append(check("reads: xray, search pages, include, return_minimal, get_state select", read_options))

    async def if_not_exists():
        thread = str(uuid.uuid4())
        await expect_status(
            lambda: client.runs.create(thread, aid, input={"topic": TOPIC}),
            {404},
            "a run on an unknown thread without if_not_exists",
        )
        values = await client.runs.wait(thread, aid, input={"topic": TOPIC}, if_not_exists="create")
        expect(values.get("topic") == TOPIC, f"wait returned {short(values)}")
        got = await client.threads.get(thread)
        expect(got["thread_id"] == thread and got["status"] == "interrupted", f"created thread: {short(got)}")

    pending.append(check("if_not_exists='create' makes the thread; default rejects with 404", if_not_exists))

    async def messages_modes():
        thread = await new_thread(client, "agent")
        question = {"messages": [{"type": "human", "content": "Hi"}]}
        parts = [p async for p in client.runs.stream(thread, "agent", input=question, stream_mode="messages-tuple")]
        pieces = [p.data for p in parts if p.event == "messages"]
        expect(len(pieces) > 1, f"the reply came in {len(pieces)} piece(s): {short([p.event for p in parts])}")
        for chunk, meta in pieces:
            expect(chunk.get("type") == "AIMessageChunk", f"chunk type: {short(chunk)}")
            expect(meta.get("langgraph_node") == "agent", f"chunk metadata: {short(meta)}")
        expect(len({c["id"] for c, _ in pieces}) == 1, "the pieces of one reply share its id")
        text = "".join(c["content"] for c, _ in pieces)
        stored = (await client.threads.get_state(thread))["values"]["messages"][-1]
        expect(stored["content"] == text and stored["id"] == pieces[0][0]["id"], f"stored reply {short(stored)} vs streamed {text!r}")
        # LangChain reads the state's messages as its own.
        state = (await client.threads.get_state(thread))["values"]["messages"]
        converted = convert_to_messages(state)
        expect([type(m).__name__ for m in converted] == ["HumanMessage", "AIMessage"], f"converted: {converted!r}")
        expect(converted[1].content == text and converted[1].id == stored["id"], f"converted reply: {converted[1]!r}")
        parts = [p async for p in client.runs.stream(thread, "agent", input=question, stream_mode="messages")]
        names = [p.event for p in parts]
        expect(names.count("messages/metadata") == 1, f"messages/metadata events: {short(names)}")
        partial = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
        expect(len(partial) > 1 and all(b.startswith(a) for a, b in zip(partial, partial[1:])), f"partials grow: {short(partial)}")
        expect(partial[-1] == text, f"the last partial is the whole reply: {partial[-1]!r}")

    pending.append(check("stream_mode messages-tuple / messages: the agent's reply piece by piece", messages_modes))

    async def breakpoint():
        thread = await new_thread(client, "breakpoint")
        values = await client.runs.wait(thread, aid, input={"topic": TOPIC}, interrupt_before=["write"])
        expect(values.get("findings") and not values.get("draft"), f"values at the breakpoint: {short(values)}")
        snapshot = await client.threads.get_state(thread)
        expect(list(snapshot["next"]) == ["write"], f"next at the breakpoint: {snapshot['next']!r}")
        status = (await client.threads.get(thread))["status"]
        # No input, no command: carry on from the breakpoint.
        carried = await client.runs.wait(thread, aid)
        expect(carried.get("draft"), f"continuing from the breakpoint: {short(carried)}")
        after = await client.threads.get_state(thread)
        expect(list(after["next"]) == ["approve"], f"next after continuing: {after['next']!r}")
        expect(status == "interrupted", f"thread status at the breakpoint was {status!r}")

    pending.append(check("interrupt_before pauses at a node; a run without input continues", breakpoint))

    async def failing_run():
        # update_state before any run: the thread names its graph (LangGraph needs that).
        created = await client.threads.create(metadata={"suite": TAG, "kind": "error"}, graph_id=GRAPH)
        thread = created["thread_id"]
        # A question no search backend answers: its research task fails.
        await client.threads.update_state(
            thread,
            {"topic": TOPIC, "questions": [{"id": "astrology", "angle": "astrology", "text": "?"}]},
            as_node="plan",
        )
        parts = []
        async for part in client.runs.stream(thread, aid, stream_mode="updates"):
            parts.append(part)
        errors = [p.data for p in parts if p.event == "error"]
        expect(len(errors) == 1, f"error events: {short(errors)} in {[p.event for p in parts]}")
        expect(
            isinstance(errors[0], dict) and errors[0].get("error") and "astrology" in str(errors[0].get("message")),
            f"error event data: {short(errors[0])}",
        )
        runs = await client.runs.list(thread)
        expect(runs and runs[0]["status"] == "error", f"failed run status: {short([r['status'] for r in runs])}")
        status = (await client.threads.get(thread))["status"]
        expect(status == "error", f"thread status after a failed run: {status!r}")
        try:
            await client.runs.wait(thread, aid)
        except httpx.HTTPStatusError as error:
            raise CheckFailed(f"runs.wait of a failing run answered HTTP {http_status(error)}, not a 200 with __error__")
        except Exception as error:  # noqa: BLE001 - the SDK raises a bare Exception for `__error__`
            expect("astrology" in str(error), f"runs.wait raised {error!r}")
        else:
            raise CheckFailed("runs.wait of a failing run returned normally")

    pending.append(check("a failing run: error event, run and thread status error, wait raises", failing_run))

    # ---------------------------------------------------------------- multitask strategies
    async def reject():
        thread = await new_thread(client, "reject")
        first = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        try:
            await client.runs.create(thread, aid, input={"topic": TOPIC}, multitask_strategy="reject")
        except ConflictError:
            pass
        else:
            raise CheckFailed("the second run on a busy thread was accepted")
        await client.runs.join(thread, first["run_id"])
        got = await client.runs.get(thread, first["run_id"])
        expect(got["status"] == "success", f"first run status {got['status']!r}")
        listed = await client.runs.list(thread)
        expect(len(listed) == 1, f"{len(listed)} runs on the thread, the rejected one must not exist")

    pending.append(check("multitask reject: 409 ConflictError, first run unharmed", reject))

    async def enqueue():
        thread = await new_thread(client, "enqueue")
        first = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        # The answer to the approval the first run will ask for: it can only succeed
        # if it runs after the first run.
        second = await client.runs.create(
            thread, aid, command={"resume": {"decision": "publish"}}, multitask_strategy="enqueue"
        )
        expect(second["status"] == "pending", f"enqueued run status {second['status']!r}")
        await client.runs.join(thread, first["run_id"])
        final = await client.runs.join(thread, second["run_id"])
        statuses = [(await client.runs.get(thread, r["run_id"]))["status"] for r in (first, second)]
        expect(statuses == ["success", "success"], f"run statuses {statuses}")
        expect(isinstance(final.get("report"), str), f"the enqueued resume did not publish: {short(final)}")

    pending.append(check("multitask enqueue: both runs succeed, in order", enqueue))

    async def interrupt():
        thread = await new_thread(client, "interrupt")
        first = await client.runs.create(thread, aid, input={"topic": TOPIC})
        await wait_thread_busy(client, thread)
        await asyncio.sleep(0.5)
        # Double texting: the second run brings new input, applied to what the first
        # run had done when it was stopped.
        second = await client.runs.create(
            thread, aid, input={"topic": "double text " + TAG}, multitask_strategy="interrupt"
        )
        old = await wait_run(client, thread, first["run_id"], {"interrupted", "success", "error"})
        expect(old["status"] == "interrupted", f"first run status {old['status']!r}")
        await client.runs.join(thread, second["run_id"])
        new = await client.runs.get(thread, second["run_id"])
        expect(new["status"] == "success", f"second run status {new['status']!r}")
        snapshot = await client.threads.get_state(thread)
        expect(snapshot["values"].get("topic") == "double text " + TAG, f"topic {snapshot['values'].get('topic')!r}")
        expect(list(snapshot["next"]) == ["approve"], f"state after the second run: next={snapshot['next']!r}")

    pending.append(check("multitask interrupt: first run interrupted, second succeeds", interrupt))

    async def rollback():
        thread = await new_thread(client, "rollback")
        first = await client.runs.create(thread, aid, input={"topic": "rolled back " + TAG})
        await wait_thread_busy(client, thread)
        await asyncio.sleep(0.5)
        second = await client.runs.create(thread, aid, input={"topic": TOPIC}, multitask_strategy="rollback")
        await client.runs.join(thread, second["run_id"])
        new = await client.runs.get(thread, second["run_id"])
        expect(new["status"] == "success", f"second run status {new['status']!r}")
        await expect_status(lambda: client.runs.get(thread, first["run_id"]), {404}, "get of the rolled-back run")
        states = await client.threads.get_history(thread, limit=100)
        topics = {s["values"].get("topic") for s in states if isinstance(s["values"], dict)}
        expect("rolled back " + TAG not in topics, f"the rolled-back run's checkpoints remain: topics {topics}")

    pending.append(check("multitask rollback: first run deleted, second succeeds", rollback))

    # ---------------------------------------------------------------- errors
    async def unknown_key():
        thread = await new_thread(client, "bad-input")
        try:
            await client.runs.create(thread, aid, input={"topic": 5})
        except UnprocessableEntityError as error:
            expect("topic" in error_text(error), f"the 422 does not name the field: {error_text(error)}")
        else:
            raise CheckFailed("a number for `topic` was accepted")
        expect(await client.runs.list(thread) == [], "a refused input created a run")
        # A key the state lacks is dropped, as LangGraph does, and named in the run.
        run = await client.runs.create(thread, aid, input={"topic": TOPIC, "colour": "blue"})
        expect(run["metadata"].get("dropped_input_keys") == ["colour"], f"run metadata: {short(run['metadata'])}")
        await client.runs.join(thread, run["run_id"])
        values = (await client.threads.get_state(thread))["values"]
        expect(values.get("topic") == TOPIC and "colour" not in values, f"values: {short(values)}")

    if STATEGRAPH:  # LangGraph accepts a mistyped field and names no dropped keys
        pending.append(check("bad input: a mistyped field is a 422; an unknown key is dropped and named", unknown_key))

    async def unknown_thread():
        missing = str(uuid.uuid4())
        try:
            await client.threads.get(missing)
        except NotFoundError:
            pass
        else:
            raise CheckFailed("get of an unknown thread succeeded")
        await expect_status(lambda: client.threads.get_state(missing), {404}, "get_state of an unknown thread")
        await expect_status(lambda: client.threads.get_history(missing), {404}, "get_history of an unknown thread")
        await expect_status(lambda: client.runs.get(missing, str(uuid.uuid4())), {404}, "get of a run on an unknown thread")
        await expect_status(lambda: client.assistants.get(str(uuid.uuid4())), {404}, "get of an unknown assistant")

    pending.append(check("unknown thread / run / assistant: 404", unknown_thread))

    async def resume_not_interrupted():
        thread = await new_thread(client, "bad-resume")
        await expect_status(
            lambda: client.runs.create(thread, aid, command={"resume": {"decision": "publish"}}),
            range(400, 500),
            "resume of a thread that never ran",
        )
        await expect_status(
            lambda: client.runs.create(tid, aid, command={"resume": {"decision": "publish"}}),
            range(400, 500),
            "resume of a finished thread",
        )

    if STATEGRAPH:  # LangGraph creates the run
        on_tid.append(("resume of a thread that is not interrupted: 4xx", resume_not_interrupted))

    async def fork():
        wanted = state.get("interrupted_checkpoint")
        expect(wanted, "no checkpoint id saved at the interrupt")
        at_interrupt = await client.threads.get_state(tid, checkpoint_id=wanted)
        parent = (at_interrupt.get("parent_checkpoint") or {}).get("checkpoint_id")
        expect(parent, f"the interrupt's checkpoint has no parent: {short(at_interrupt.get('parent_checkpoint'))}")
        before = len(await client.threads.get_history(tid, limit=100))
        # Time travel: replay from the step before the approval; it asks again.
        again = await client.runs.wait(tid, aid, checkpoint_id=parent)
        expect(again.get("__interrupt__"), f"replaying did not reach the approval again: {short(again)}")
        expect(again.get("report") is None, "the replay kept the published report")
        values = await client.runs.wait(tid, aid, command={"resume": {"decision": "reject"}})
        expect(values.get("verdict") == {"decision": "reject"}, f"the fork's verdict: {short(values.get('verdict'))}")
        expect(values.get("report") is None, "the fork published")
        history = await client.threads.get_history(tid, limit=100)
        expect(len(history) > before, f"the fork added no checkpoints ({before} → {len(history)})")
        expect(wanted in [s["checkpoint"]["checkpoint_id"] for s in history], "the old branch is gone from the history")
        old = await client.threads.get_state(tid, checkpoint_id=wanted)
        expect(list(old["next"]) == ["approve"], "the old branch's checkpoint changed")

    on_tid.append(("runs.wait with checkpoint_id replays from an old checkpoint (a fork)", fork))

    async def webhook():
        received: list[dict] = []
        got = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = dict(
                line.split(": ", 1) for line in head.decode().split("\r\n")[1:] if ": " in line
            )
            length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
            body = json.loads(await reader.readexactly(length))
            key = next((v for k, v in headers.items() if k.lower() == "idempotency-key"), None)
            received.append({"body": body, "key": key})
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            loop.call_soon(got.set)

        receiver = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = receiver.sockets[0].getsockname()[1]
        try:
            thread = await new_thread(client, "webhook")
            run = await client.runs.create(thread, aid, input={"topic": TOPIC}, webhook=f"http://127.0.0.1:{port}/hook")
            await asyncio.wait_for(got.wait(), 20)
            call = received[0]
            expect(call["body"].get("run_id") == run["run_id"], f"the webhook's run: {short(call['body'])}")
            expect(call["body"].get("values", {}).get("topic") == TOPIC, f"the webhook's values: {short(call['body'])}")
            expect(call["key"], "the webhook call has no Idempotency-Key")
        finally:
            receiver.close()
        thread = await new_thread(client, "refused")
        error = await expect_status(
            lambda: client.runs.create(thread, aid, input={"topic": TOPIC}, webhook="http://169.254.169.254/latest/meta-data/"),
            {422},
            "a webhook to the cloud metadata address",
        )
        expect("webhook" in error_text(error), f"the 422 does not name `webhook`: {error_text(error)}")
        expect(await client.runs.list(thread) == [], "a refused run was created")

    if STATEGRAPH:
        pending.append(check("runs.create webhook: the run's end POSTed to a local receiver; internal addresses 422", webhook))

    async def delayed_run():
        thread = await new_thread(client, "delayed")
        asked = time.monotonic()
        run = await client.runs.create(thread, aid, input={"topic": TOPIC}, after_seconds=1)
        got = await client.runs.get(thread, run["run_id"])
        expect(got["status"] == "pending", f"a delayed run started at once: {short(got)}")
        await client.runs.join(thread, run["run_id"])
        expect(time.monotonic() - asked >= 1.0, "the run did not wait its after_seconds")
        state = await client.threads.get_state(thread)
        expect(state["values"].get("topic") == TOPIC, f"the delayed run did not run: {short(state)}")
        later = await client.runs.create(thread, aid, input={"topic": TOPIC}, after_seconds=5, multitask_strategy="enqueue")
        await client.runs.cancel(thread, later["run_id"])
        cancelled = await client.runs.get(thread, later["run_id"])
        expect(cancelled["status"] == "interrupted", f"a delayed run cancelled before its start: {short(cancelled)}")
        await expect_status(
            lambda: client.runs.create(thread, aid, input={"topic": TOPIC}, after_seconds=-1),
            {422},
            "a negative after_seconds",
        )

    pending.append(check("runs.create after_seconds: pending until then, cancellable", delayed_run))

    async def crons():
        made = await client.crons.create(
            aid,
            schedule="* * * * * *",
            input={"topic": TOPIC},
            metadata={"suite": TAG, "cron": "every-second"},
            on_run_completed="keep",
        )
        cron_id = made["cron_id"]
        for key in ("cron_id", "assistant_id", "thread_id", "schedule", "payload", "next_run_date", "enabled", "metadata", "created_at"):
            expect(key in made, f"a cron has no `{key}`: {short(made)}")
        deadline = time.monotonic() + 15
        while True:
            threads = await client.threads.search(metadata={"cron_id": cron_id}, limit=50)
            if len(threads) >= 2:
                break
            if time.monotonic() > deadline:
                raise CheckFailed(f"a cron every second made {len(threads)} runs in 15 s")
            await asyncio.sleep(0.2)
        runs = await client.runs.list(threads[0]["thread_id"])
        expect(runs and runs[0]["metadata"].get("cron_id") == cron_id, f"the cron's run: {short(runs)}")
        found = await client.crons.search(metadata={"cron": "every-second"})
        expect([c["cron_id"] for c in found] == [cron_id], f"crons.search(metadata): {short(found)}")
        expect(await client.crons.count(assistant_id=aid) >= 1, "crons.count(assistant_id)")
        paused = await client.crons.update(cron_id, enabled=False)
        expect(paused["enabled"] is False, f"crons.update(enabled=False): {short(paused)}")
        expect(await client.crons.search(enabled=True, metadata={"cron": "every-second"}) == [], "a paused cron is found as enabled")
        await client.crons.delete(cron_id)
        await expect_status(lambda: client.crons.delete(cron_id), {404}, "deleting a deleted cron")

        thread = await new_thread(client, "cron")
        daily = await client.crons.create_for_thread(
            thread, aid, schedule="0 9 * * *", timezone="Europe/Paris", input={"topic": TOPIC}
        )
        expect(daily["thread_id"] == thread and daily["timezone"] == "Europe/Paris", f"create_for_thread: {short(daily)}")
        moved = await client.crons.update(daily["cron_id"], schedule="30 6 * * *", timezone="UTC")
        expect(str(moved["next_run_date"]).endswith("06:30:00.000Z"), f"crons.update(schedule): {short(moved)}")
        listed = await client.crons.search(thread_id=thread, select=["cron_id", "schedule"])
        expect(listed == [{"cron_id": daily["cron_id"], "schedule": "30 6 * * *"}], f"crons.search(select): {short(listed)}")
        for field, options in (
            ("schedule", {"schedule": "every morning"}),
            ("timezone", {"schedule": "0 9 * * *", "timezone": "Mars/Olympus"}),
            ("end_time", {"schedule": "0 9 * * *", "end_time": datetime(2001, 1, 1, tzinfo=timezone.utc)}),
        ):
            error = await expect_status(lambda: client.crons.create(aid, **options), {422}, f"a cron with a bad {field}")
            expect(field in error_text(error), f"the 422 does not name `{field}`: {error_text(error)}")
        await client.threads.delete(thread)
        await expect_status(lambda: client.crons.delete(daily["cron_id"]), {404}, "a deleted thread's cron")

    if STATEGRAPH:
        pending.append(check("crons: create, fire every second, search, count, pause, time zone, delete; bad input 422s", crons))

    # ---------------------------------------------------------------- store (sync client)
    def store_checks() -> None:
        sync = get_sync_client(url=url, api_key=None)
        namespace = ["sdk", TAG, "prefs"]
        sync.store.put_item(namespace, "unit", {"unit": "celsius", "n": 1})
        sync.store.put_item(["sdk", TAG, "other"], "unit", {"unit": "kelvin", "n": 2})
        item = sync.store.get_item(namespace, "unit")
        expect(item["value"] == {"unit": "celsius", "n": 1}, f"get_item value {short(item)}")
        expect(list(item["namespace"]) == namespace and item["key"] == "unit", f"get_item: {short(item)}")
        expect(item.get("created_at") and item.get("updated_at"), f"get_item has no timestamps: {short(item)}")
        found = sync.store.search_items(["sdk", TAG])
        keys = sorted((tuple(i["namespace"]), i["key"]) for i in found["items"])
        expect(len(keys) == 2, f"search_items under the prefix: {keys}")
        filtered = sync.store.search_items(["sdk", TAG], filter={"unit": "kelvin"})
        expect([i["namespace"][-1] for i in filtered["items"]] == ["other"], f"filtered search: {short(filtered)}")
        spaces = sync.store.list_namespaces(prefix=["sdk", TAG])
        expect(
            sorted(map(list, spaces["namespaces"])) == [["sdk", TAG, "other"], ["sdk", TAG, "prefs"]],
            f"list_namespaces: {short(spaces)}",
        )
        sync.store.delete_item(namespace, "unit")
        # LangGraph's server answers 200 `null` for a missing item: clients test for None.
        gone = sync.store.get_item(namespace, "unit")
        expect(gone is None, f"get_item of a deleted item returned {short(gone)}")
        left = sync.store.search_items(["sdk", TAG])
        expect(len(left["items"]) == 1, f"after the delete: {short(left)}")

    async def store():
        await asyncio.get_running_loop().run_in_executor(None, store_checks)

    pending.append(check("store (sync client): put, get, search, namespaces, delete", store))

    def sync_threads() -> None:
        sync = get_sync_client(url=url, api_key=None)
        found = sync.assistants.search(graph_id=GRAPH)
        expect(found and found[0]["graph_id"] == GRAPH, f"sync assistants.search: {short(found)}")
        thread = sync.threads.create(metadata={"suite": TAG, "kind": "sync"})
        parts = list(sync.runs.stream(thread["thread_id"], aid, input={"topic": TOPIC}, stream_mode="custom"))
        expect(parts and parts[0].event == "metadata", "sync stream does not start with metadata")
        expect(any(p.event == "custom" for p in parts), "sync stream has no custom events")
        expect(sync.threads.get(thread["thread_id"])["status"] == "interrupted", "sync run did not pause")

    async def sync_client():
        await asyncio.get_running_loop().run_in_executor(None, sync_threads)

    pending.append(check("sync client: search, create, stream", sync_client))

    if keyed is not None:
        keyed_url, key = keyed

        async def api_key():
            good = get_client(url=keyed_url, api_key=key)
            found = await good.assistants.search(graph_id=GRAPH)
            expect(found and found[0]["graph_id"] == GRAPH, f"search with the key: {short(found)}")
            thread = await good.threads.create()
            expect(thread.get("thread_id"), f"create with the key: {short(thread)}")
            try:
                await get_client(url=keyed_url, api_key=None).assistants.search()
            except AuthenticationError:
                pass
            else:
                raise CheckFailed("a request without the key was answered")
            try:
                await get_client(url=keyed_url, api_key=key + "-wrong").threads.get(thread["thread_id"])
            except PermissionDeniedError:
                pass
            else:
                raise CheckFailed("a request with a wrong key was answered")

        pending.append(check("api key: x-api-key from get_client(api_key=...); none 401, wrong 403", api_key))

    await asyncio.gather(*pending)
    for name, body in on_tid:
        await check(name, body)

    print()
    if failures:
        print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
        return 1
    print("every check passed")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--langgraph" in args:
        # Against LangGraph's own server: skip what only stategraph promises.
        args.remove("--langgraph")
        STATEGRAPH = False
    if len(args) not in (1, 3):
        print("usage: python acceptance.py [--langgraph] <base_url> [<keyed_url> <api_key>]", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(args[0], (args[1], args[2]) if len(args) == 3 else None)))
