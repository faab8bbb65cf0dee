"""The safe expression evaluator used by kernel specs."""
from __future__ import annotations

import pytest

from perfmodel.errors import SpecError
from perfmodel.expr import check_syntax, evaluate, evaluate_int, names_in


@pytest.mark.parametrize(("text", "names", "expected"), [
    ("1 + 2 * 3", {}, 7),
    ("(1 + 2) * 3", {}, 9),
    ("Width / TILE_WIDTH", {"Width": 64, "TILE_WIDTH": 16}, 4),
    ("76 / 16", {}, 4.75),
    ("ceil(76 / 16)", {}, 5),
    ("ceil(n / 16.0)", {"n": 76}, 5),
    ("cdiv(62, 16)", {}, 4),
    ("cdiv(64, 16)", {}, 4),
    ("floor(7 / 2)", {}, 3),
    ("7 // 2", {}, 3),
    ("7 % 4", {}, 3),
    ("2 ** 10", {}, 1024),
    ("-n + 1", {"n": 3}, -2),
    ("min(a, b, 7)", {"a": 9, "b": 8}, 7),
    ("max(a, b)", {"a": 9, "b": 8}, 9),
    ("int(3.9)", {}, 3),
    ("TILE + M - 1", {"TILE": 12, "M": 5}, 16),
    ("a < b", {"a": 1, "b": 2}, True),
    ("1 <= x < 10", {"x": 10}, False),
    ("x % 2 == 1 and x > 0", {"x": 5}, True),
    ("a if a > b else b", {"a": 3, "b": 4}, 4),
    (64, {}, 64),
    (1.5, {}, 1.5),
])
def test_evaluate(text, names, expected):
    result = evaluate(text, names)
    assert result == expected
    assert type(result) is type(expected)


def test_integer_results_stay_int():
    assert isinstance(evaluate("Width * Width", {"Width": 64}), int)
    assert isinstance(evaluate("cdiv(a, b)", {"a": 10, "b": 3}), int)
    assert isinstance(evaluate("ceil(a / b)", {"a": 10, "b": 3}), int)


@pytest.mark.parametrize("text", [
    "__import__('os')",
    "open('x')",
    "a.b",
    "a[0]",
    "lambda: 1",
    "'text'",
    "[1, 2]",
    "sum(1, 2)",
    "x := 3",
    "f'{a}'",
    "a @ b",
    "a & 2",
    "ceil(x=1)",
    "True",
])
def test_rejects_disallowed_constructs(text):
    with pytest.raises(SpecError) as info:
        evaluate(text, {"a": 1, "b": 2}, file="k.yaml", field="grid[0]")
    message = str(info.value)
    assert "k.yaml" in message and "grid[0]" in message
    assert repr(text) in message or text in message


def test_unknown_name_lists_known_ones():
    with pytest.raises(SpecError, match=r"unknown name 'Widht'.*known: TILE_WIDTH, Width") as info:
        evaluate("Widht / 16", {"Width": 64, "TILE_WIDTH": 16}, file="k.yaml", field="grid[0]")
    assert "k.yaml: field 'grid[0]'" in str(info.value)


def test_syntax_error_names_file_field_and_text():
    with pytest.raises(SpecError) as info:
        evaluate("Width / (16", {"Width": 64}, file="spec.yaml", field="block[1]")
    message = str(info.value)
    assert "spec.yaml" in message and "block[1]" in message and "'Width / (16'" in message
    assert "quote" in message  # the YAML flow-list hint


def test_division_by_zero_and_huge_powers():
    with pytest.raises(SpecError, match="division by zero"):
        evaluate("1 / x", {"x": 0})
    with pytest.raises(SpecError, match="too large"):
        evaluate("10 ** 100000")
    with pytest.raises(SpecError, match="too large"):
        evaluate("2 ** 4000 * 2 ** 4000")


def test_integer_shifts_as_c_writes_sizes():
    assert evaluate("1 << 20") == 1_048_576 and evaluate("n >> 2", {"n": 64}) == 16
    assert evaluate("(1 << 10) * 3 + 1") == 3073            # Python's precedence: + binds tighter than <<
    for text, needle in [("1 << 1.5", "integers"), ("1 << -1", "outside"), ("1 << 5000", "outside"),
                         ("1 << 4096", "too large"), ("2.0 >> 1", "integers")]:
        with pytest.raises(SpecError, match=needle):
            evaluate(text)


def test_c_names_that_are_python_keywords():
    """A kernel parameter may be called `lambda`, `in` or `from` (HeCBench's ace: `double lambda`)."""
    assert evaluate("lambda * 2 + in_", {"lambda": 3, "in_": 1}) == 7
    assert evaluate("in if is else 0", {"in": 5, "is": 1}) == 5          # if/else stay operators
    assert names_in("cdiv(from, 4) + lambda") == {"from", "lambda"}
    with pytest.raises(SpecError, match=r"the construct 'lambda.x' is not allowed"):
        evaluate("lambda.x", {"lambda": 1})
    with pytest.raises(SpecError, match="syntax error"):
        evaluate("lambda: 1")


def test_wrong_number_of_arguments():
    with pytest.raises(SpecError, match="cdiv.. takes 2"):
        evaluate("cdiv(3)")


def test_evaluate_int():
    assert evaluate_int("Width / 16", {"Width": 64}) == 4
    assert evaluate_int(4.0) == 4
    with pytest.raises(SpecError, match="expected an integer.*cdiv"):
        evaluate_int("76 / 16")
    with pytest.raises(SpecError, match=">= 1"):
        evaluate_int("n - 5", {"n": 3}, minimum=1)


def test_names_in_and_check_syntax():
    assert names_in("cdiv(Width, TILE_WIDTH) + n") == {"Width", "TILE_WIDTH", "n"}
    assert names_in(5) == set()
    check_syntax("max(a, 1)")
    with pytest.raises(SpecError):
        check_syntax("a.b")
    with pytest.raises(SpecError):
        check_syntax([1, 2])  # type: ignore[arg-type]


def test_never_calls_eval(monkeypatch):
    import builtins

    def forbidden(*args, **kwargs):
        raise AssertionError("eval must not be used")

    monkeypatch.setattr(builtins, "eval", forbidden)
    assert evaluate("cdiv(76, 16) * 16", {}) == 80
