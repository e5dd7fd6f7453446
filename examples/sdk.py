"""A 10-turn agent loop with memory through the Python SDK (``pip install ./sdk/python openai``).

Each turn: write what the turn taught (a hard constraint, a tool result, observations about the user), append
the turn to the stored conversation, ask for the window with ``format="openai"`` and send
``window.prompt["messages"]`` to an OpenAI-compatible endpoint. Run against ``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/sdk.py --model llama3.2
"""

from __future__ import annotations

import os
import uuid

from ctxmem_client import Client
from openai import OpenAI
from scenario import CONSTRAINT, TURNS, arguments, search_flights


def main() -> None:
    args = arguments(__doc__.splitlines()[0])

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
