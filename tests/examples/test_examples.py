"""Every example under examples/ runs as a user would run it: a subprocess against a real ``ctxmem serve`` and a
local stand-in for the model endpoint. It must exit 0 after its ten turns, and the model must have been sent
the memory: from the turn the constraint is written on, every system prompt holds it, and the tool result
likewise. The learning example writes no item itself: the constraint the user says in turn 1 reaches the model
of a later conversation only through extraction."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.examples.model_stub import ModelStub, model_stub, system_text
from tests.sdk.conftest import UNLIMITED, Live, live_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["raw_http", "sdk", "langgraph_store", "agents_session"]
LEARNING = "learn_from_conversation"
CONSTRAINT = "Never book flights that land after 22:00."


@pytest.fixture(scope="session")
async def live(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    async with live_server(server_url, tmp_path_factory.mktemp("examples-live"), UNLIMITED) as found:
        yield found


@pytest.fixture(scope="module")
def stub() -> Iterator[ModelStub]:
    with model_stub() as found:
        yield found


def test_every_example_is_tested() -> None:
    # scenario.py is what the examples share (the turns, the rule, the tool, the command line), not one itself.
    found = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "scenario")
    assert found == sorted([*EXAMPLES, LEARNING])


def run_example(name: str, live_url: str, key: str, stub: ModelStub) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CTXMEM_URL": live_url,
        "CTXMEM_API_KEY": key,
        "OPENAI_BASE_URL": stub.url(name),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", EXAMPLES)
async def test_example_runs_its_loop_with_memory(name: str, live: Live, stub: ModelStub) -> None:
    keys = await live.tenant()
    done = run_example(name, live.url, keys.agent, stub)
    assert done.returncode == 0, done.stdout + done.stderr
    prompts = [system_text(body) for body in stub.requests[name]]
    assert len(prompts) == 10, done.stdout
    assert CONSTRAINT not in prompts[0]
    assert all(CONSTRAINT in p for p in prompts[1:]), prompts  # written at turn 2
    assert "TP1943" not in prompts[1]
    assert all("TP1943" in p for p in prompts[2:]), prompts  # the tool result, written at turn 3
    assert "(stub) memory I was given:" in done.stdout


async def test_the_learning_example_brings_a_said_constraint_to_a_later_conversation(
    live: Live, stub: ModelStub
) -> None:
    keys = await live.tenant()
    done = run_example(LEARNING, live.url, keys.agent, stub)
    assert done.returncode == 0, done.stdout + done.stderr
    prompts = [system_text(body) for body in stub.requests[LEARNING]]
    assert len(prompts) == 3, done.stdout  # two turns, then the later conversation's question
    assert not any("Redis Cluster" in p for p in prompts[:2]), prompts  # said, not yet learned
    assert "Redis Cluster" in prompts[2], prompts  # learned: in the later window, which shares none of its words
    assert "learned by rules/1" in done.stdout and "constraint (hard)" in done.stdout, done.stdout
