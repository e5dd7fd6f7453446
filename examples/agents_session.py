"""A 10-turn OpenAI Agents SDK agent with ctxmem memory (``pip install './sdk/python[agents]' openai``).

``CtxmemSession`` keeps the run's items in a ctxmem conversation, and the agent's instructions are the
system message of a window with ``format="openai"`` (``window.prompt["messages"][0]``): the constraint, the
tool result and the profile the loop wrote, fitted to a budget. The Runner sends them, with the session's
history and the new input, to an OpenAI-compatible endpoint through Chat Completions. Run against
``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/agents_session.py --model llama3.2
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunContextWrapper, Runner, set_tracing_disabled
from ctxmem_client import AsyncClient
from ctxmem_client.agents import CtxmemSession
from openai import AsyncOpenAI
from scenario import CONSTRAINT, TURNS, arguments, search_flights


async def main() -> None:
    args = arguments(__doc__.splitlines()[0])

    set_tracing_disabled(True)  # traces would go to OpenAI's platform
    openai_client = AsyncOpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    session_id = f"trip-{uuid.uuid4().hex[:8]}"
    async with AsyncClient(args.ctxmem_url, api_key=args.api_key) as client:
        user = client.user(args.user)
        current = {"input": ""}

        async def instructions(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            window = await user.window(input=current["input"], max_tokens=3000, session_id=session_id, format="openai")
            assert window.prompt is not None
            first = window.prompt["messages"][0]
            return str(first["content"]) if first["role"] == "system" else "You are a travel agent."

        agent = Agent(
            name="travel",
            instructions=instructions,
            model=OpenAIChatCompletionsModel(model=args.model, openai_client=openai_client),
        )
        session = CtxmemSession(session_id, user)
        for turn, text in enumerate(TURNS, start=1):
            if turn == 2:
                await user.add_item(type="constraint", content=CONSTRAINT, hard=True, source="user")
            if turn == 3:  # what the agent's flight-search tool returned
                result = search_flights()
                await user.add_item(type="tool_result", content=result, source="tool", session_id=session_id)
            if turn == 4:
                await user.observe(
                    dimension="preference", key="seat", value="aisle", session_id=session_id, explicit=True
                )
            await user.observe(dimension="goal", key="destination", value="Lisbon", session_id=session_id)
            current["input"] = text
            run = await Runner.run(agent, text, session=session)
            print(f"[{turn}] {text}\n    -> {run.final_output}")
        print("stored items:", len(await session.get_items()))
        await session.clear_session()


if __name__ == "__main__":
    asyncio.run(main())
