"""A 10-turn agent loop with memory through the Python SDK (``pip install ./sdk/python openai``).

Each turn: write what the turn taught (a hard constraint, a tool result, observations about the user), append
the turn to the stored conversation, ask for the window with ``format="openai"`` and send
``window.prompt["messages"]`` to an OpenAI-compatible endpoint. Run against ``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/sdk.py --model llama3.2
"""

from __future__ import annotations

import argparse
import json
import os
import uuid

from ctxmem_client import Client
from openai import OpenAI

TURNS = [
    "I need a flight from Porto to Lisbon next Friday.",
    "Please never book me on a flight that lands after 22:00.",
    "What flights are there?",
    "I prefer an aisle seat, by the way.",
    "Which of those flights fits my rules?",
    "How long is the TP1943 flight?",
    "Can you add a checked bag?",
    "Actually make it the cheapest one that still fits.",
    "Does it leave from terminal 1?",
    "Great, book it.",
]
CONSTRAINT = "Never book flights that land after 22:00."
FLIGHTS = [{"id": "TP1943", "lands": "21:10", "price_eur": 89}, {"id": "FR8345", "lands": "23:05", "price_eur": 39}]


def search_flights() -> str:
    """The agent's tool; a real one would call an API."""
    return json.dumps({"flights": FLIGHTS})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctxmem-url", default=os.environ.get("CTXMEM_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--api-key", default=os.environ.get("CTXMEM_API_KEY"))
    parser.add_argument("--model-url", default=os.environ.get("OPENAI_BASE_URL"), help="an OpenAI-compatible /v1 URL")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--user", default="demo-traveller")
    args = parser.parse_args()

    model = OpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    with Client(args.ctxmem_url, api_key=args.api_key) as client:
        user = client.user(args.user)
        for turn, text in enumerate(TURNS, start=1):
            if turn == 2:  # the user stated a rule: a hard constraint, always in the window, verbatim
                user.add_item(type="constraint", content=CONSTRAINT, hard=True, source="user")
            if turn == 3:  # the agent called a tool: its result is memory too
                user.add_item(type="tool_result", content=search_flights(), source="tool", session_id=session_id)
            if turn == 4:  # evidence about the user, scored into the profile
                user.observe(dimension="preference", key="seat", value="aisle", session_id=session_id, explicit=True)
            user.observe(dimension="goal", key="destination", value="Lisbon", session_id=session_id)

            window = user.window(input=text, max_tokens=3000, session_id=session_id, format="openai")
            assert window.prompt is not None
            completion = model.chat.completions.create(model=args.model, messages=window.prompt["messages"])
            reply = completion.choices[0].message.content or ""
            user.append_messages(
                session_id, [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
            )
            print(f"[{turn}] {text}\n    -> {reply}")
        user.end_session(session_id)


if __name__ == "__main__":
    main()
