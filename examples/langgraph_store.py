"""A 10-turn LangGraph agent with ctxmem as its store (``pip install './sdk/python[langgraph]' openai``).

The graph has two nodes: ``remember`` writes what the turn taught — notes through the LangGraph store API
(``store.put``, items of the user underneath), and through the same user handle a hard constraint, a tool
result and observations — and ``respond`` asks for the window with ``format="openai"`` and sends
``window.prompt["messages"]`` to an OpenAI-compatible endpoint. Run against ``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/langgraph_store.py --model llama3.2
"""

from __future__ import annotations

import os
import uuid
from typing import Any, TypedDict

from ctxmem_client import Client
from ctxmem_client.langgraph import CtxmemStore
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from openai import OpenAI
from scenario import CONSTRAINT, TURNS, arguments, search_flights


class State(TypedDict):
    turn: int
    input: str
    reply: str


def build(store: CtxmemStore, model: OpenAI, model_name: str, session_id: str) -> Any:
    user = store.user

    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        turn = state["turn"]
        if turn == 2:
            user.add_item(type="constraint", content=CONSTRAINT, hard=True, source="user")
        if turn == 3:
            user.add_item(type="tool_result", content=search_flights(), source="tool", session_id=session_id)
        if turn == 4:
            user.observe(dimension="preference", key="seat", value="aisle", session_id=session_id, explicit=True)
            store.put(("preferences",), "seat", {"seat": "aisle", "said_at_turn": turn})
        user.observe(dimension="goal", key="destination", value="Lisbon", session_id=session_id)
        store.put(("trips", session_id), "request", {"from": "Porto", "to": "Lisbon", "last_turn": turn})
        return {}

    def respond(state: State) -> dict[str, Any]:
        window = user.window(input=state["input"], max_tokens=3000, session_id=session_id, format="openai")
        assert window.prompt is not None
        completion = model.chat.completions.create(model=model_name, messages=window.prompt["messages"])
        reply = completion.choices[0].message.content or ""
        user.append_messages(
            session_id, [{"role": "user", "content": state["input"]}, {"role": "assistant", "content": reply}]
        )
        return {"reply": reply}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "respond")
    graph.add_edge("respond", END)
    return graph.compile(store=store)


def main() -> None:
    args = arguments(__doc__.splitlines()[0])

    model = OpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    with Client(args.ctxmem_url, api_key=args.api_key) as client:
        store = CtxmemStore(client.user(args.user))
        app = build(store, model, args.model, session_id)
        for turn, text in enumerate(TURNS, start=1):
            result = app.invoke({"turn": turn, "input": text, "reply": ""})
            print(f"[{turn}] {text}\n    -> {result['reply']}")
        # the store API reads the same memory back
        print("store:", [(i.namespace, i.key, i.value) for i in store.search(("preferences",), query="seat")])
        print("namespaces:", store.list_namespaces())
        client.user(args.user).end_session(session_id)


if __name__ == "__main__":
    main()
