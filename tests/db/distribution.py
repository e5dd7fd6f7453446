"""Does a statement carry Citus's distribution key? A check of one SQL statement, as PostgreSQL logged it.

Citus routes a statement to one shard when every distributed table in it is pinned to one value of the
distribution column (``tenant_id``): compared with ``=`` to a constant or a parameter, or joined on
``tenant_id`` to a table that is (a co-located join). Anything else — a table read by ``id`` alone, a
join on another column, ``tenant_id = ANY(...)`` — is a multi-shard query (every shard is asked) or,
for a join, a repartition that Citus may refuse. An INSERT names ``tenant_id`` among its columns.

The statement is parsed by PostgreSQL's own parser (pglast, libpg_query). The logged parameter values
are put in place of ``$n`` first, so that ``(:tenant IS NULL OR t.tenant_id = :tenant)`` — the jobs'
"one tenant or all" — is judged by what was bound, as PostgreSQL's planner folds it: a bound tenant pins,
a NULL one (a sweep of every tenant) does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import A_Expr_Kind, BoolExprType, NullTestType

KEY = "tenant_id"
PARAMS = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")
PLACEHOLDER = re.compile(r"\$(\d+)")


def parameters(detail: str | None) -> dict[int, str]:
    """``{1: "'abc'", 2: "NULL"}`` from a log line's ``Parameters: $1 = 'abc', $2 = NULL``."""
    return {int(n): value for n, value in PARAMS.findall(detail or "")}


def bind(sql: str, params: dict[int, str]) -> str:
    """``sql`` with each ``$n`` replaced by its logged literal (placeholders never occur inside the
    service's string literals, so a plain substitution is exact here)."""
    return PLACEHOLDER.sub(lambda m: params.get(int(m.group(1)), m.group(0)), sql)


@dataclass
class _Level:
    """One SELECT / UPDATE / DELETE / INSERT body: the relations it reads, by the name its columns use."""

    distributed: dict[str, str] = field(default_factory=dict)  # name in scope -> table
    derived: dict[str, bool] = field(default_factory=dict)  # subquery / CTE name -> pinned to one tenant
    others: set[str] = field(default_factory=set)  # reference and catalog tables, functions
    pinned: set[str] = field(default_factory=set)
    joins: list[tuple[str, str]] = field(default_factory=list)  # a.tenant_id = b.tenant_id


class Checker:
    def __init__(self, distributed: set[str]) -> None:
        self.distributed_tables = distributed

    def problems(self, sql: str) -> list[str]:
        """Why ``sql`` (parameters bound) would not reach a single shard; empty when every distributed
        table in it is pinned to one tenant."""
        out: list[str] = []
        for raw in parse_sql(sql):
            self._statement(raw.stmt, ctes={}, outer=[], out=out)
        return out

    def touches(self, sql: str) -> set[str]:
        """The distributed tables ``sql`` names."""
        found: set[str] = set()
        for raw in parse_sql(sql):
            for node in _walk(raw.stmt):
                if isinstance(node, ast.RangeVar) and node.relname in self.distributed_tables:
                    found.add(node.relname)
        return found

    # -- statements -------------------------------------------------------------------------------------

    def _statement(self, stmt: Any, *, ctes: dict[str, bool], outer: list[_Level], out: list[str]) -> bool:
        """Check ``stmt``; True when it reads at least one distributed table and all of them are pinned
        (its rows then belong to one tenant)."""
        ctes = dict(ctes)
        with_clause = getattr(stmt, "withClause", None)
        if with_clause is not None:
            for cte in with_clause.ctes or ():
                ctes[cte.ctename] = self._statement(cte.ctequery, ctes=ctes, outer=outer, out=out)
        if isinstance(stmt, ast.SelectStmt):
            if stmt.larg is not None and stmt.rarg is not None:
                left = self._statement(stmt.larg, ctes=ctes, outer=outer, out=out)
                right = self._statement(stmt.rarg, ctes=ctes, outer=outer, out=out)
                return left and right
            if stmt.valuesLists is not None:
                for value in _walk(stmt.valuesLists):
                    if isinstance(value, ast.SubLink):
                        self._statement(value.subselect, ctes=ctes, outer=outer, out=out)
                return False
            return self._level(
                relations=list(stmt.fromClause or ()),
                quals=[stmt.whereClause],
                rest=[stmt.targetList, stmt.havingClause, stmt.groupClause, stmt.sortClause],
                ctes=ctes,
                outer=outer,
                out=out,
            )
        if isinstance(stmt, ast.UpdateStmt):
            return self._level(
                relations=[stmt.relation, *(stmt.fromClause or ())],
                quals=[stmt.whereClause],
                rest=[stmt.targetList, stmt.returningClause],
                ctes=ctes,
                outer=outer,
                out=out,
            )
        if isinstance(stmt, ast.DeleteStmt):
            return self._level(
                relations=[stmt.relation, *(stmt.usingClause or ())],
                quals=[stmt.whereClause],
                rest=[stmt.returningClause],
                ctes=ctes,
                outer=outer,
                out=out,
            )
        if isinstance(stmt, ast.InsertStmt):
            table = stmt.relation.relname
            source = stmt.selectStmt
            pinned = False
            if source is not None:
                pinned = self._statement(source, ctes=ctes, outer=outer, out=out)
            if table in self.distributed_tables:
                columns = [c.name for c in stmt.cols or ()]
                if KEY not in columns:
                    out.append(f"INSERT INTO {table} without {KEY}")
                return True
            return pinned
        return False  # utility statements: BEGIN, SET, LISTEN, SELECT pg_notify(...) are SelectStmt above

    def _level(
        self,
        *,
        relations: list[Any],
        quals: list[Any],
        rest: list[Any],
        ctes: dict[str, bool],
        outer: list[_Level],
        out: list[str],
    ) -> bool:
        level = _Level()
        join_quals: list[Any] = []
        lateral: list[Any] = []
        for rel in relations:
            self._relation(rel, level, join_quals, lateral, ctes=ctes, outer=outer, out=out)
        scope = [*outer, level]
        self._pins(level, [*quals, *join_quals], scope)
        # A LATERAL subquery sees this level's tables, pinned or not, so it is checked once they are known.
        for rel in lateral:
            name = rel.alias.aliasname if rel.alias is not None else "?"
            level.derived[name] = self._statement(rel.subquery, ctes=ctes, outer=scope, out=out)
            if level.derived[name]:
                level.pinned.add(name)
        if lateral:
            self._pins(level, [*quals, *join_quals], scope)
        for name, table in level.distributed.items():
            if name not in level.pinned:
                out.append(f"{table}" + (f" (as {name})" if name != table else "") + f" not pinned by {KEY}")
        # Subqueries in the conditions and the select list see this level's relations.
        for node in [*quals, *join_quals, *rest]:
            for sub in _sublinks(node):
                self._statement(sub.subselect, ctes=ctes, outer=scope, out=out)
        pinned_derived = [n for n, ok in level.derived.items() if ok and n in level.pinned]
        return bool(level.distributed or pinned_derived) and all(n in level.pinned for n in level.distributed)

    def _pins(self, level: _Level, quals: list[Any], scope: list[_Level]) -> None:
        level.joins.clear()
        for c in (c for q in quals for c in _conjuncts(q)):
            self._pin(c, level, scope)
        changed = True
        while changed:  # co-located joins carry a pin from one table to the next
            changed = False
            for a, b in level.joins:
                if (a in level.pinned) != (b in level.pinned):
                    level.pinned |= {a, b}
                    changed = True

    def _relation(
        self,
        rel: Any,
        level: _Level,
        join_quals: list[Any],
        lateral: list[Any],
        *,
        ctes: dict[str, bool],
        outer: list[_Level],
        out: list[str],
    ) -> None:
        if isinstance(rel, ast.RangeVar):
            name = rel.alias.aliasname if rel.alias is not None else rel.relname
            if rel.schemaname is None and rel.relname in ctes:
                level.derived[name] = ctes[rel.relname]
                if ctes[rel.relname]:
                    level.pinned.add(name)
            elif rel.relname in self.distributed_tables:
                level.distributed[name] = rel.relname
            else:
                level.others.add(name)
        elif isinstance(rel, ast.JoinExpr):
            self._relation(rel.larg, level, join_quals, lateral, ctes=ctes, outer=outer, out=out)
            self._relation(rel.rarg, level, join_quals, lateral, ctes=ctes, outer=outer, out=out)
            if rel.quals is not None:
                join_quals.append(rel.quals)
        elif isinstance(rel, ast.RangeSubselect):
            if rel.lateral:
                lateral.append(rel)
                return
            name = rel.alias.aliasname if rel.alias is not None else "?"
            ok = self._statement(rel.subquery, ctes=ctes, outer=outer, out=out)
            level.derived[name] = ok
            if ok:
                level.pinned.add(name)
        elif isinstance(rel, ast.RangeFunction):
            name = rel.alias.aliasname if rel.alias is not None else "?"
            level.others.add(name)

    # -- conditions -------------------------------------------------------------------------------------

    def _pin(self, cond: Any, level: _Level, scope: list[_Level]) -> None:
        cond = _fold(cond)
        if cond is None:
            return
        if isinstance(cond, ast.BoolExpr) and cond.boolop == BoolExprType.AND_EXPR:
            for arg in cond.args:
                self._pin(arg, level, scope)
            return
        if not isinstance(cond, ast.A_Expr):
            return
        if cond.kind == A_Expr_Kind.AEXPR_IN and isinstance(cond.rexpr, list | tuple) and len(cond.rexpr) == 1:
            left, right = cond.lexpr, cond.rexpr[0]
        elif cond.kind == A_Expr_Kind.AEXPR_OP and _op(cond) == "=":
            left, right = cond.lexpr, cond.rexpr
        else:
            return
        if isinstance(left, ast.RowExpr) and isinstance(right, ast.RowExpr):
            for a, b in zip(left.args, right.args, strict=False):
                self._pin_pair(a, b, level, scope)
            return
        self._pin_pair(left, right, level, scope)

    def _pin_pair(self, left: Any, right: Any, level: _Level, scope: list[_Level]) -> None:
        a, b = self._key_owner(left, level, scope), self._key_owner(right, level, scope)
        if a is not None and b is not None:
            if a[0] is level and b[0] is level:
                level.joins.append((a[1], b[1]))
            elif a[0] is level and b[1] in b[0].pinned:
                level.pinned.add(a[1])  # correlated with an outer, pinned table
            elif b[0] is level and a[1] in a[0].pinned:
                level.pinned.add(b[1])
            return
        for own, value in ((a, right), (b, left)):
            if own is not None and own[0] is level and _constant(value):
                level.pinned.add(own[1])

    def _key_owner(self, expr: Any, level: _Level, scope: list[_Level]) -> tuple[_Level, str] | None:
        """The (level, relation name) whose ``tenant_id`` ``expr`` is, if it is one."""
        while isinstance(expr, ast.TypeCast):
            expr = expr.arg
        if not isinstance(expr, ast.ColumnRef):
            return None
        fields = [f.sval for f in expr.fields if isinstance(f, ast.String)]
        if not fields or fields[-1] != KEY:
            return None
        if len(fields) >= 2:
            for candidate in reversed(scope):
                if fields[-2] in candidate.distributed or fields[-2] in candidate.derived:
                    return candidate, fields[-2]
            return None
        # Unqualified: the one relation of the innermost level that has the column.
        names = [*level.distributed, *level.derived]
        return (level, names[0]) if len(names) == 1 else None


def _op(expr: ast.A_Expr) -> str:
    return ".".join(n.sval for n in expr.name)


def _constant(expr: Any) -> bool:
    """A non-NULL constant (a bound parameter is one, after ``bind``)."""
    while isinstance(expr, ast.TypeCast):
        expr = expr.arg
    if isinstance(expr, ast.ParamRef):  # an unbound parameter: one value at execution
        return True
    return isinstance(expr, ast.A_Const) and not expr.isnull


def _null_constant(expr: Any) -> bool:
    while isinstance(expr, ast.TypeCast):
        expr = expr.arg
    return isinstance(expr, ast.A_Const) and bool(expr.isnull)


def _fold(cond: Any) -> Any:
    """``cond`` with ``<constant> IS NULL`` decided, as the planner folds it once parameters are bound:
    None when the whole condition is true (it restricts nothing)."""
    if isinstance(cond, ast.NullTest) and cond.nulltesttype == NullTestType.IS_NULL:
        if _null_constant(cond.arg):
            return None
        if _constant(cond.arg) and not isinstance(_uncast(cond.arg), ast.ParamRef):
            return False
        return cond
    if isinstance(cond, ast.BoolExpr) and cond.boolop == BoolExprType.OR_EXPR:
        kept = []
        for arg in cond.args:
            folded = _fold(arg)
            if folded is None:
                return None
            if folded is not False:
                kept.append(folded)
        if len(kept) == 1:
            return kept[0]
        return cond
    return cond


def _uncast(expr: Any) -> Any:
    while isinstance(expr, ast.TypeCast):
        expr = expr.arg
    return expr


def _conjuncts(cond: Any) -> Iterator[Any]:
    if cond is None:
        return
    if isinstance(cond, ast.BoolExpr) and cond.boolop == BoolExprType.AND_EXPR:
        for arg in cond.args:
            yield from _conjuncts(arg)
    else:
        yield cond


def _sublinks(node: Any) -> Iterator[ast.SubLink]:
    """The subqueries of an expression, not those nested in them (their own levels find those)."""
    if isinstance(node, ast.SubLink):
        yield node
        return
    if isinstance(node, list | tuple):
        for n in node:
            yield from _sublinks(n)
    elif isinstance(node, ast.Node):
        for slot in node:
            yield from _sublinks(getattr(node, slot))


def _walk(node: Any) -> Iterator[Any]:
    if isinstance(node, list | tuple):
        for n in node:
            yield from _walk(n)
    elif isinstance(node, ast.Node):
        yield node
        for slot in node:
            yield from _walk(getattr(node, slot))
