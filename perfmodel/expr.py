"""A small, safe arithmetic evaluator for kernel-spec expressions (grid, block, lengths, scalar args).

Expressions are parsed with Python's :mod:`ast` module and evaluated by walking an allow-list of node types:
numbers, names (the spec's params), ``+ - * / // % **``, integer ``<< >>``, unary ``-``/``+``, parentheses, comparisons
(``< <= > >= == !=``, chained), ``and``/``or``/``not``, the conditional ``a if c else b`` and calls to
``ceil``, ``cdiv``, ``floor``, ``min``, ``max``, ``int``, ``abs``. Anything else - attribute access,
subscripts, lambdas, strings, other calls - is rejected with a :class:`~perfmodel.errors.SpecError` that names
the file, the field and the offending text. User text is never passed to ``eval``.

Integer arithmetic stays integer:

- ``a / b`` on integers gives an ``int`` when the division is exact and a ``float`` otherwise (so
  ``Width / TILE_WIDTH`` is an int grid size, while ``76 / 16`` is 4.75 - use ``cdiv(76, 16)`` or
  ``ceil(76 / 16)`` for the seed's ``ceil(n/16.0)``);
- ``//`` and ``%`` are Python's floor division and modulo (the spec's quantities are non-negative);
- ``ceil``, ``floor`` and ``cdiv`` return ints; ``cdiv(a, b)`` is ``ceil(a / b)`` computed exactly on ints.
"""
from __future__ import annotations

import ast
import keyword
import math
import operator
import re
from collections.abc import Mapping
from functools import lru_cache

from perfmodel.errors import SpecError

Number = int | float

# Guard against expressions that would take forever or eat all memory (e.g. 10**10**10).
_MAX_POW_EXPONENT = 4096
_MAX_INT_BITS = 4096


def _as_int_if_integral(value: Number) -> Number:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _truediv(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and b != 0 and a % b == 0:
        return a // b
    return a / b


def _ceil(x: Number) -> int:
    return int(math.ceil(x))


def _floor(x: Number) -> int:
    return int(math.floor(x))


def _cdiv(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        return -((-a) // b)
    return int(math.ceil(a / b))


def _shift(op):
    """``<<``/``>>`` as C writes sizes (``1 << 20``): integers only, a count from 0 to the size limit."""
    def shift(a: Number, b: Number) -> int:
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int) or not isinstance(b, int):
            raise TypeError("shifts take integers")
        if not 0 <= b <= _MAX_INT_BITS:
            raise ValueError(f"shift count {b} outside 0..{_MAX_INT_BITS}")
        return op(a, b)
    return shift


def _int(x: Number) -> int:
    return int(x)


FUNCTIONS = {
    "ceil": (_ceil, 1, 1),
    "floor": (_floor, 1, 1),
    "cdiv": (_cdiv, 2, 2),
    "min": (min, 1, 64),
    "max": (max, 1, 64),
    "int": (_int, 1, 1),
    "abs": (abs, 1, 1),
}

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: _shift(operator.lshift),
    ast.RShift: _shift(operator.rshift),
}
_BINOP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
               ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>"}
_CMPOPS = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


def _where(file: str | None, field: str | None) -> str:
    parts = [p for p in (file, f"field '{field}'" if field else None) if p]
    return ": ".join(parts)


def _error(message: str, text: str, file: str | None, field: str | None) -> SpecError:
    where = _where(file, field)
    prefix = f"{where}: " if where else ""
    return SpecError(f"{prefix}{message} in expression {text!r}")


# C names that are Python keywords (a kernel parameter called `lambda`, `in`, `from`, `is`): spelt `_kw_NAME_` for
# Python's parser, and named as written again in the tree. `and or not if else` stay the expression's operators.
_KEYWORD_NAMES = frozenset(keyword.kwlist) - {"and", "or", "not", "if", "else", "True", "False", "None"}
_KEYWORD = re.compile(r"(?<![\w.])(" + "|".join(sorted(_KEYWORD_NAMES)) + r")(?!\w)")
_RESPELT = re.compile(r"_kw_(\w+?)_(?!\w)")


def _respell(text: str) -> str:
    return _KEYWORD.sub(r"_kw_\1_", text.strip())


@lru_cache(maxsize=4096)
def _parse(text: str) -> ast.expr:
    tree = ast.parse(_respell(text), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            m = _RESPELT.fullmatch(node.id)
            if m and m.group(1) in _KEYWORD_NAMES:
                node.id = m.group(1)
    return tree.body


def names_in(expression: str | Number) -> set[str]:
    """The param names an expression refers to (function names excluded)."""
    if not isinstance(expression, str):
        return set()
    try:
        node = _parse(expression)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id not in FUNCTIONS:
            found.add(sub.id)
    return found


def check_syntax(expression: str | Number, *, file: str | None = None, field: str | None = None) -> None:
    """Validate an expression's shape (allowed nodes only) without evaluating it."""
    if isinstance(expression, bool) or not isinstance(expression, (str, int, float)):
        raise _error(f"expected a number or an expression, got {type(expression).__name__}",
                     str(expression), file, field)
    if isinstance(expression, str):
        node = _parse_or_raise(expression, file, field)
        _Validator(expression, file, field).visit(node)


def _parse_or_raise(text: str, file: str | None, field: str | None) -> ast.expr:
    if not text.strip():
        raise _error("empty expression", text, file, field)
    try:
        return _parse(text)
    except SyntaxError as err:
        hint = ""
        if text.count("(") != text.count(")"):
            hint = "; in a YAML flow list [a, b], quote an expression that contains a comma: ['cdiv(n, 16)']"
        raise _error(f"syntax error ({err.msg}{hint})", text, file, field) from None


class _Validator:
    """Walks the tree once and rejects any node outside the allow-list."""

    def __init__(self, text: str, file: str | None, field: str | None):
        self.text, self.file, self.field = text, file, field

    def fail(self, what: str, node: ast.AST) -> SpecError:
        snippet = ast.get_source_segment(_respell(self.text), node)
        snippet = _RESPELT.sub(r"\1", snippet) if snippet else type(node).__name__
        return _error(f"{what} {snippet!r} is not allowed (allowed: numbers, params, + - * / // % ** << >>, "
                      f"comparisons, and/or/not, 'a if c else b', {', '.join(sorted(FUNCTIONS))})",
                      self.text, self.file, self.field)

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.fail("the literal", node)
        elif isinstance(node, ast.Name):
            pass
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.fail("the operator", node)
            self.visit(node.left)
            self.visit(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
                raise self.fail("the operator", node)
            self.visit(node.operand)
        elif isinstance(node, ast.Compare):
            if not all(type(op) in _CMPOPS for op in node.ops):
                raise self.fail("the comparison", node)
            self.visit(node.left)
            for comparator in node.comparators:
                self.visit(comparator)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self.visit(value)
        elif isinstance(node, ast.IfExp):
            self.visit(node.test)
            self.visit(node.body)
            self.visit(node.orelse)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise self.fail("the call", node)
            if node.keywords:
                raise self.fail("keyword arguments in", node)
            _, low, high = FUNCTIONS[node.func.id]
            if not low <= len(node.args) <= high:
                raise _error(f"{node.func.id}() takes {low if low == high else f'{low} to {high}'} "
                             f"argument(s), got {len(node.args)}", self.text, self.file, self.field)
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    raise self.fail("the starred argument", arg)
                self.visit(arg)
        else:
            raise self.fail("the construct", node)


def evaluate(expression: str | Number, names: Mapping[str, Number] | None = None, *,
             file: str | None = None, field: str | None = None) -> Number:
    """Evaluate ``expression`` (a number or expression text) over ``names``.

    Raises :class:`SpecError` naming ``file`` and ``field`` for bad syntax, a disallowed construct, an
    unknown name (listing the known ones), division by zero or an out-of-range result."""
    names = names or {}
    if isinstance(expression, bool):
        raise _error("expected a number or an expression, got a boolean", str(expression), file, field)
    if isinstance(expression, (int, float)):
        return expression
    if not isinstance(expression, str):
        raise _error(f"expected a number or an expression, got {type(expression).__name__}",
                     str(expression), file, field)
    node = _parse_or_raise(expression, file, field)
    _Validator(expression, file, field).visit(node)
    try:
        return _eval(node, names, expression, file, field)
    except ZeroDivisionError:
        raise _error("division by zero", expression, file, field) from None
    except OverflowError:
        raise _error("numeric overflow", expression, file, field) from None
    except (TypeError, ValueError) as err:
        raise _error(f"invalid operation ({err})", expression, file, field) from None


def _eval(node: ast.expr, names: Mapping[str, Number], text: str, file: str | None, field: str | None):
    def ev(n: ast.expr):
        return _eval(n, names, text, file, field)

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names)) or "(none)"
            raise _error(f"unknown name {node.id!r} (known: {known})", text, file, field)
        return names[node.id]
    if isinstance(node, ast.BinOp):
        left, right = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Pow):
            if isinstance(right, (int, float)) and abs(right) > _MAX_POW_EXPONENT:
                raise _error("exponent too large", text, file, field)
        result = _BINOPS[type(node.op)](left, right)
        if isinstance(result, int) and result.bit_length() > _MAX_INT_BITS:
            raise _error("result too large", text, file, field)
        if isinstance(result, complex):
            raise _error("complex result", text, file, field)
        return result
    if isinstance(node, ast.UnaryOp):
        value = ev(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        return not value
    if isinstance(node, ast.Compare):
        left = ev(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = ev(comparator)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result = True
            for value in node.values:
                result = ev(value)
                if not result:
                    return result
            return result
        result = False
        for value in node.values:
            result = ev(value)
            if result:
                return result
        return result
    if isinstance(node, ast.IfExp):
        return ev(node.body) if ev(node.test) else ev(node.orelse)
    if isinstance(node, ast.Call):
        function = FUNCTIONS[node.func.id][0]  # type: ignore[union-attr]
        return function(*[ev(arg) for arg in node.args])
    raise _error(f"unsupported construct {type(node).__name__}", text, file, field)  # pragma: no cover


def evaluate_int(expression: str | Number, names: Mapping[str, Number] | None = None, *,
                 file: str | None = None, field: str | None = None, minimum: int | None = None) -> int:
    """Evaluate and require an integer result (an integral float is accepted), optionally ``>= minimum``."""
    value = evaluate(expression, names, file=file, field=field)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise _error(f"expected an integer, got {value!r} ('/' divides exactly here: a // b truncates as C's "
                         "integer division does - host code's n / 128 + 1 is n // 128 + 1 - and cdiv(a, b) rounds "
                         "up)", str(expression), file, field)
        value = int(value)
    if minimum is not None and value < minimum:
        raise _error(f"expected an integer >= {minimum}, got {value}", str(expression), file, field)
    return value
