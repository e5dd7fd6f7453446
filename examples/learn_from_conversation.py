"""Memory learned from the conversation itself, through the Python SDK (``pip install ./sdk/python openai``).

In the first turn the user states a rule; the agent writes no item. The turns are stored (``append_messages``),
ctxmem extracts them (``extract_session``: the rule becomes a hard constraint in the user's own words, with the
message it was said in as evidence), and in a later conversation the window for an unrelated question, sent to an
OpenAI-compatible endpoint, holds it. Run against ``make serve``:

    CTXMEM_API_KEY=cmk_... OPENAI_BASE_URL=http://127.0.0.1:11434/v1 python examples/learn_from_conversation.py
"""

from __future__ import annotations

import os
import uuid

from ctxmem_client import Client, User
from openai import OpenAI
from scenario import arguments

FIRST_CONVERSATION = [
    "We have a small ops team, so don't recommend Redis Cluster.",  # the rule, said once, in turn 1
    "What should step 1 of the database migration do?",
]
LATER_QUESTION = "Which cache should we put in front of the product catalogue?"


def turn(model: OpenAI, model_name: str, user: User, session_id: str, text: str) -> str:
    """One model call: the window for ``text``, sent as ``window.prompt["messages"]``; the turn is then stored."""
    window = user.window(input=text, max_tokens=2000, session_id=session_id, format="openai")
    assert window.prompt is not None
    completion = model.chat.completions.create(model=model_name, messages=window.prompt["messages"])
    reply = completion.choices[0].message.content or ""
    user.append_messages(session_id, [{"role": "user", "content": text}, {"role": "assistant", "content": reply}])
    print(f"[{session_id}] {text}\n    -> {reply}")
    return window.text


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    model = OpenAI(base_url=args.model_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    first, later = f"chat-{uuid.uuid4().hex[:8]}", f"chat-{uuid.uuid4().hex[:8]}"
    with Client(args.ctxmem_url, api_key=args.api_key) as client:
        user = client.user(args.user)
        for text in FIRST_CONVERSATION:
            turn(model, args.model, user, first, text)

        # Learn from what was said (the server's extract job would do it later by itself).
        learned = user.extract_session(first)
        print(f"\nlearned by {learned.extracted_by} from {learned.messages} messages:")
        seq = {m.id: m.seq for m in user.iter_messages(first)}  # the evidence names the stored message
        for record in learned.records:
            where = record.evidence
            print(f"  {record.type}{' (hard)' if record.hard else ''}: {record.content!r} [{record.outcome}]")
            print(f"    said in message {seq.get(where.message_id)} of {where.session_id}, characters {where.span}")
        for rejected in learned.rejected:
            print(f"  rejected ({rejected.reason}): {rejected.detail}")
        constraints = [r for r in learned.records if r.type == "constraint" and r.hard]
        if not constraints:
            raise SystemExit("nothing was learned: is extraction on (CTXMEM_EXTRACTOR)?")

        # A later conversation, a question that shares none of the rule's words: the window holds the rule.
        print()
        text = turn(model, args.model, user, later, LATER_QUESTION)
        kept = [r.content for r in constraints if r.content in text]
        print(f"\nthe later window holds the learned constraint: {kept}")
        print("everything learned about the user:", [i.content for i in user.list_items(extracted_by="any").items])
        if not kept:
            raise SystemExit("the learned constraint is not in the later window")


if __name__ == "__main__":
    main()
