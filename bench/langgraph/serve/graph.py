"""The serving benchmark's graph for LangGraph's development server (`langgraph dev`).

The same shape as stategraph's `chain3` (bench/src/lib.rs): START -> a -> b -> c -> END,
each node adds 1 to `n` and appends its name to `log`. With input {"n": 1} a run ends
with n == 4 and log == ["a", "b", "c"], which `serve_load` checks.
"""
from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    n: Annotated[int, operator.add]
    log: Annotated[list[str], operator.add]


def _node(name: str):
    def run(state: State) -> dict:
        return {"n": 1, "log": [name]}

    run.__name__ = name
    return run


_g = StateGraph(State)
for _name in ("a", "b", "c"):
    _g.add_node(_name, _node(_name))
_g.add_edge(START, "a")
_g.add_edge("a", "b")
_g.add_edge("b", "c")
_g.add_edge("c", END)

# `langgraph dev` compiles nothing itself: it serves this compiled graph and gives it
# its own checkpointer.
graph = _g.compile()
