"""Job names are defined once (schemas/jobs.py); the runner, the CLI and the routes take theirs from it."""

from __future__ import annotations

import argparse

import pytest

from jobs.runner import JOBS
from schemas.jobs import JOB_NAMES
from service.app import create_app
from service.cli import build_parser
from service.settings import Settings


def test_every_name_has_a_job_and_no_job_lacks_a_name() -> None:
    assert sorted(JOBS) == sorted(JOB_NAMES)
    assert len(set(JOB_NAMES)) == len(JOB_NAMES) == 6


def _subcommand(parser: argparse.ArgumentParser, *path: str) -> argparse.ArgumentParser:
    for name in path:
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


@pytest.mark.parametrize(("command", "dest"), [("run", "name"), ("runs", "name")])
def test_cli_choices_are_the_job_names(command: str, dest: str) -> None:
    parser = _subcommand(build_parser(), "jobs", command)
    (action,) = (a for a in parser._actions if a.dest == dest)
    assert tuple(action.choices or ()) == JOB_NAMES


def test_routes_accept_exactly_the_job_names(settings: Settings) -> None:
    spec = create_app(settings).openapi()
    (name,) = (p for p in spec["paths"]["/v1/jobs/{name}/run"]["post"]["parameters"] if p["name"] == "name")
    assert tuple(name["schema"]["enum"]) == JOB_NAMES
    for n in JOB_NAMES:
        assert n in name["description"]
