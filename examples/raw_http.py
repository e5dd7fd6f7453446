"""A 10-turn agent loop with memory over plain HTTP (``pip install httpx openai``): no ctxmem client.

Each turn: write what the turn taught (a hard constraint, a tool result, observations about the user), append
the turn to the stored conversation, ask for the window with ``"format": "openai"`` and send its
``prompt.messages`` to an OpenAI-compatible endpoint. Every write carries an ``Idempotency-Key``, so it can be
retried safely. Run against ``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/raw_http.py --model llama3.2
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import httpx
from openai import OpenAI
from scenario import CONSTRAINT, TURNS, arguments, search_flights

TOOL_RESULT = search_flights()


def post(http: httpx.Client, path: str, body: dict[str, Any]) -> Any:
    response = http.post(path, json=body, headers={"Idempotency-Key": str(uuid.uuid4())})
    response.raise_for_status()  # errors are application/problem+json: response.json()["type"] names the problem
    return response.json()


def main() -> None:
    args = arguments(__doc__.splitlines()[0])

    model = OpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {args.api_key}"}
    with httpx.Client(base_url=f"{args.ctxmem_url}/v1/users/{args.user}", headers=headers, timeout=30) as http:
        for turn, text in enumerate(TURNS, start=1):
            if turn == 2:
                post(http, "/items", {"type": "constraint", "content": CONSTRAINT, "hard": True, "source": "user"})
            if turn == 3:
                post(
                    http,
                    "/items",
                    {"type": "tool_result", "content": TOOL_RESULT, "source": "tool", "session_id": session_id},
                )
            if turn == 4:
                post(
                    http,
                    "/observations",
                    {
                        "dimension": "preference",
                        "key": "seat",
                        "value": "aisle",
                        "session_id": session_id,
                        "explicit": True,
                    },
                )
            post(
                http,
                "/observations",
                {"dimension": "goal", "key": "destination", "value": "Lisbon", "session_id": session_id},
            )

            window = post(
                http, "/window", {"input": text, "max_tokens": 3000, "session_id": session_id, "format": "openai"}
            )
            completion = model.chat.completions.create(model=args.model, messages=window["prompt"]["messages"])
            reply = completion.choices[0].message.content or ""
            messages = [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
            post(http, f"/sessions/{session_id}/messages", {"messages": messages})
            print(f"[{turn}] {text}\n    -> {reply}")
        http.delete(f"/sessions/{session_id}", headers={"Idempotency-Key": str(uuid.uuid4())}).raise_for_status()


if __name__ == "__main__":
    main()
