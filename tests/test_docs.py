"""The documentation under docs/ stays true to the code: every route has a curl example in docs/api.md, every
problem type is explained in docs/errors.md, every setting is listed with its real default in
docs/configuration.md, links between the pages resolve, and nothing points outside the repository.

Each check first asserts that it found what it checks (routes, problem types, settings, files), so a change in
how the app is built cannot make it pass by finding nothing.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from service.app import create_app
from service.errors import ServiceError
from service.settings import FLAT_NAMES, Settings, group_and_field

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ("concepts.md", "api.md", "errors.md", "configuration.md", "operations.md", "design.md", "window.md")
# Routes outside the OpenAPI schema that a user calls; the rest (Swagger UI's assets and redirect) are the
# documentation pages' own plumbing.
UNDOCUMENTED_PLUMBING = ("/docs/oauth2-redirect", "/docs-assets")
NON_SCHEMA_ROUTES = ("/metrics", "/openapi.json", "/docs", "/redoc")
TYPE_PREFIX = "urn:ctxmem:problem:"


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data_dir = tmp_path_factory.mktemp("docs-app")
    return create_app(Settings(data_dir=data_dir, tokenizer="estimate", vector_backend="off"))


def _routes(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path template) of every operation the app serves: the OpenAPI schema's, plus the routes left
    out of the schema that users call (metrics, the schema itself, its two browsers)."""
    out = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    served = {getattr(r, "path", None) for r in app.routes}
    assert "/metrics" in served and "/openapi.json" in served
    out |= {("GET", path) for path in NON_SCHEMA_ROUTES if path in served}
    return out


def _curl_calls(text: str) -> list[tuple[str, str]]:
    """(METHOD, path) of every curl command in the shell blocks of a page."""
    calls = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            for cmd in re.findall(r"curl\b[^|;]*", line):
                url = re.search(r"\$BASE(/[^\s\"'?]*)", cmd)
                if url is None:
                    continue
                method = re.search(r"-X\s+([A-Z]+)", cmd)
                calls.append((method.group(1) if method else "GET", url.group(1)))
    return calls


def _template_regex(path: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", path)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


def test_every_route_has_a_heading_and_a_curl_example(app: Any) -> None:
    routes = _routes(app)
    assert len(routes) >= 20, routes
    text = _read("api.md")
    calls = _curl_calls(text)
    assert len(calls) >= len(routes), calls
    missing_heading = [f"{m} {p}" for m, p in sorted(routes) if f"{m} {p}" not in text]
    assert not missing_heading, f"docs/api.md has no `METHOD path` entry for: {missing_heading}"
    no_example = []
    for method, path in sorted(routes):
        pattern = _template_regex(path)
        matches = [c for c in calls if c[0] == method and pattern.match(c[1])]
        # A curl of /v1/users/alice/items/batch also matches /v1/users/{user_id}/items/{item_id}; that is fine
        # as long as each route has an example of its own somewhere.
        if not matches:
            no_example.append(f"{method} {path}")
    assert not no_example, f"docs/api.md has no curl example for: {no_example}"


def _status_tables(tree: ast.AST) -> set[str]:
    """Slugs in ``{status: ("slug", title, ...)}`` tables, and in ``.get(status, ("slug", ...))`` fallbacks."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and node.keys:
            if all(isinstance(k, ast.Constant) and isinstance(k.value, int) for k in node.keys):
                for v in node.values:
                    if isinstance(v, ast.Tuple) and isinstance(v.elts[0], ast.Constant):
                        out.add(str(v.elts[0].value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            for arg in node.args[1:]:
                if isinstance(arg, ast.Tuple) and arg.elts and isinstance(arg.elts[0], ast.Constant):
                    out.add(str(arg.elts[0].value))
    return out


def _slugs_in_source() -> set[str]:
    """Problem slugs written in the source: ``slug`` class attributes, ``problem_type("…")`` calls, and the
    status → slug tables of modules that build problems from a variable slug."""
    slugs: set[str] = set()
    files = [p for d in ("service", "jobs") for p in (ROOT / d).rglob("*.py") if "migrations" not in p.parts]
    assert len(files) > 30
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        variable_slug = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                    for name, value in zip(names, values, strict=False):
                        if isinstance(name, ast.Name) and name.id == "slug" and isinstance(value, ast.Constant):
                            slugs.add(str(value.value))
            elif isinstance(node, ast.AnnAssign):
                if isinstance(node.target, ast.Name) and node.target.id == "slug" and node.value is not None:
                    assert isinstance(node.value, ast.Constant)
                    slugs.add(str(node.value.value))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "problem_type":
                if node.args and isinstance(node.args[0], ast.Constant):
                    slugs.add(str(node.args[0].value))
                elif node.args and not _is_self_slug(node.args[0]):
                    variable_slug = True
        if variable_slug:
            table = _status_tables(tree)
            assert table, f"{path.relative_to(ROOT)} builds problem types from a variable and no status table"
            slugs |= table
    return slugs


def _is_self_slug(arg: ast.expr) -> bool:
    """``problem_type(self.slug)``: the class attributes, collected above."""
    return isinstance(arg, ast.Attribute) and arg.attr == "slug"


def _slugs_of_classes() -> set[str]:
    seen: set[str] = set()
    todo = [ServiceError]
    while todo:
        cls = todo.pop()
        seen.add(cls.slug)
        todo.extend(cls.__subclasses__())
    return seen


def test_every_problem_type_is_explained(app: Any) -> None:
    # ``app`` imports every router, so every ServiceError subclass is defined by now.
    in_source = _slugs_in_source()
    classes = _slugs_of_classes()
    assert {"unauthorized", "budget-too-small", "method-not-allowed", "internal-error", "job-running"} <= in_source
    assert classes <= in_source, f"slugs the source scan missed: {classes - in_source}"
    assert len(in_source) >= 20, in_source
    text = _read("errors.md")
    missing = sorted(s for s in in_source if f"{TYPE_PREFIX}{s}" not in text)
    assert not missing, f"docs/errors.md does not explain: {missing}"
    documented = set(re.findall(re.escape(TYPE_PREFIX) + r"([a-z0-9-]+)", text))
    stale = sorted(documented - in_source)
    assert not stale, f"docs/errors.md explains types the code no longer has: {stale}"


GROUP = object()  # a nested settings group: documented as "see below", its fields one by one


def _env_defaults() -> dict[str, Any]:
    """CTXMEM_* variable → default, for every flat name; the groups inside groups (4C weights, window
    value model) both as a whole and field by field."""
    out: dict[str, Any] = {}
    for flat in FLAT_NAMES:
        group, field = group_and_field(flat)
        default = Settings.model_fields[group].get_default(call_default_factory=True)
        value = getattr(default, field)
        var = f"CTXMEM_{flat.upper()}"
        if isinstance(value, BaseModel):
            out[var] = GROUP
            for sub, sub_field in type(value).model_fields.items():
                out[f"{var}__{sub.upper()}"] = sub_field.get_default(call_default_factory=True)
        else:
            out[var] = value
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, dict):
        return json.dumps(value)
    if value == "" or value == []:  # an empty string, or a list that is comma-separated in the environment
        return "(empty)"
    return str(value)


def test_every_setting_is_listed_with_its_default() -> None:
    expected = _env_defaults()
    assert len(expected) >= 80, len(expected)
    rows = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^\| `(CTXMEM_[A-Z0-9_]+)` \| ([^|]*) \|", _read("configuration.md"), re.M)
    }
    missing = sorted(set(expected) - set(rows))
    assert not missing, f"docs/configuration.md does not list: {missing}"
    unknown = sorted(set(rows) - set(expected))
    assert not unknown, f"docs/configuration.md lists settings the code does not have: {unknown}"
    wrong = {}
    for var, default in expected.items():
        documented = rows[var].strip("`")
        if default is GROUP:
            if not documented.startswith("see"):
                wrong[var] = (documented, "see below")
        elif documented != _shown(default):
            wrong[var] = (documented, _shown(default))
    assert not wrong, f"documented default differs from the code (documented, actual): {wrong}"


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout.decode()
        return [ROOT / p for p in listed.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", ".ctxmem", "node_modules", "__pycache__"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def test_nothing_points_outside_the_repository() -> None:
    # Spelled in pieces so that this file does not match itself.
    needles = ["/work/" + "shared", "../" + "shared", "DES" + "IGN §", "DES" + "IGN.md"]
    # The CI entry point hands the Citus cluster tests the source the CI machine keeps beside the clone when it
    # has one (tests/citus/build.py): an input of that run, not a document the repository refers to.
    allowed = {(".ci/run", "../" + "shared")}
    files = [p for p in _tracked_files() if p.is_file()]
    assert len(files) > 100, len(files)
    offenders = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for needle in needles:
            if needle in text and (str(path.relative_to(ROOT)), needle) not in allowed:
                line = text[: text.index(needle)].count("\n") + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {needle}")
    assert not offenders, "references to a document outside the repository:\n" + "\n".join(offenders)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_citus_page_shows_the_distribution_script() -> None:
    """docs/citus.md shows the script ``ctxmem citus distribute --print-sql`` prints, from its one definition."""
    from service.db.citus import distribution_sql

    page = (ROOT / "docs" / "citus.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sql\n(.*?)```", page, flags=re.S)
    assert distribution_sql() in blocks, "docs/citus.md: paste the output of ctxmem citus distribute --print-sql"


def test_links_between_pages_resolve() -> None:
    sources = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    assert len(sources) >= len(PAGES) + 1
    broken = []
    checked = 0
    for source in sources:
        text = re.sub(r"```.*?```", "", source.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                broken.append(f"{source.name}: external link {target} (the docs must work offline)")
                continue
            file_part, _, anchor = target.partition("#")
            dest = (source.parent / file_part).resolve() if file_part else source
            checked += 1
            if not dest.exists() or ROOT not in dest.parents:
                broken.append(f"{source.name}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{source.name}: {target} (no such heading)")
    assert checked >= 30, checked
    assert not broken, "broken links:\n" + "\n".join(broken)


def _readme_section(title: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"\n## {title}\n" in readme, f"README has no section {title!r}"
    return readme.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_lists_every_page() -> None:
    section = _readme_section("Documentation")
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert set(PAGES) <= set(pages), pages
    missing = [page for page in pages if f"(docs/{page})" not in section]
    assert not missing, f"README's Documentation section does not link: {missing}"


def test_readme_stays_a_first_hour_page() -> None:
    # The README serves a user's first hour; the API, every setting and the benchmark history live in docs/
    # and bench/README.md.
    size = (ROOT / "README.md").stat().st_size
    assert size <= 12 * 1024, f"README.md is {size} bytes; move detail to docs/ or bench/README.md"


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?", text)


def test_readme_figures_are_bench_results() -> None:
    """Each headline figure names the command that measured it, and every number in it is one that
    bench/README.md's results report, so the two cannot drift apart."""
    section = _readme_section("Headline figures")
    assert "(bench/README.md#results)" in section
    rows = [r for r in re.findall(r"^\| (.+) \|$", section, re.M) if not r.startswith(("what |", "---"))]
    assert len(rows) >= 5, rows
    bench_readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    assert "\n## Results\n" in bench_readme
    results = bench_readme.split("\n## Results\n", 1)[1]
    wrong = []
    for row in rows:
        what, figure, command = (c.strip() for c in row.split(" | "))
        match = re.fullmatch(r"`(?:python -m (bench\.\w+)[^`]*|make bench)`", command)
        module = (match.group(1) if match.group(1) else "bench.ingest") if match else None
        if module is None or not (ROOT / (module.replace(".", "/") + ".py")).exists():
            wrong.append(f"{what}: no benchmark command in {command!r}")
            continue
        if module not in bench_readme:
            wrong.append(f"{what}: {module} is not in bench/README.md")
        numbers = _numbers(figure)
        assert numbers, row
        for number in numbers:
            if not re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d])", results):
                wrong.append(f"{what}: {number} is not among bench/README.md's results")
    assert not wrong, "\n".join(wrong)
