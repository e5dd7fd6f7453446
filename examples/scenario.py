"""What every example shares: the user's ten turns, the rule they state, the tool's answer, and the command
line (where ctxmem and the model endpoint are). Each example shows only its own integration."""

from __future__ import annotations

import argparse
import json
import os

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


def arguments(description: str) -> argparse.Namespace:
    """--ctxmem-url, --api-key, --model-url, --model and --user, defaulting to the usual environment."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ctxmem-url", default=os.environ.get("CTXMEM_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--api-key", default=os.environ.get("CTXMEM_API_KEY"))
    parser.add_argument("--model-url", default=os.environ.get("OPENAI_BASE_URL"), help="an OpenAI-compatible /v1 URL")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--user", default="demo-traveller")
    return parser.parse_args()
