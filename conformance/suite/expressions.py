"""``${...}`` expressions in suite values: saved values, resource names, small arithmetic.

``"${epoch}"`` alone keeps the value's type (an int stays an int); inside a longer string it is
interpolated. Expressions are a small safe subset of Python: names, dotted access into saved
mappings, ``[index]``, integer and string literals, ``+ - *`` and unary minus.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping

PATTERN = re.compile(r"\$\{([^}]*)\}")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


class ExpressionError(Exception):
    pass


def _parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise ExpressionError(f"bad expression ${{{text}}}: {error.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.BinOp,
                                 ast.UnaryOp, ast.Load, ast.USub, ast.Add, ast.Sub, ast.Mult)):
            raise ExpressionError(f"${{{text}}}: {type(node).__name__} is not allowed in suite expressions")
    return tree


def _evaluate(node: ast.expr, variables: dict, text: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in variables:
            known = ", ".join(sorted(variables)) or "none"
            raise ExpressionError(f"${{{text}}}: nothing named {node.id!r} is defined yet (defined: {known})")
        return variables[node.id]
    if isinstance(node, ast.Attribute):
        base = _evaluate(node.value, variables, text)
        if isinstance(base, dict) and node.attr in base:
            return base[node.attr]
        raise ExpressionError(f"${{{text}}}: {node.attr!r} is not in {_describe(base)}")
    if isinstance(node, ast.Subscript):
        base = _evaluate(node.value, variables, text)
        index = _evaluate(node.slice, variables, text)
        try:
            return base[index]
        except (KeyError, IndexError, TypeError):
            raise ExpressionError(f"${{{text}}}: no [{index!r}] in {_describe(base)}") from None
    if isinstance(node, ast.UnaryOp):
        return -_evaluate(node.operand, variables, text)
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, variables, text), _evaluate(node.right, variables, text)
        try:
            return _BINARY[type(node.op)](left, right)
        except TypeError as error:
            raise ExpressionError(f"${{{text}}}: {error}") from None
    raise ExpressionError(f"${{{text}}}: unsupported expression")


def _describe(value) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {sorted(map(str, value))}"
    return f"{type(value).__name__} {value!r}"[:120]


_DOTTED = re.compile(r"\s*([A-Za-z_]\w*(?:\.[\w-]+)*)\s*")


def _evaluate_expression(text: str, variables: dict):
    """A plain dotted path is looked up directly, so names like ``topics.in`` (a keyword) work."""
    dotted = _DOTTED.fullmatch(text)
    if dotted:
        head, *rest = dotted.group(1).split(".")
        if head not in variables:
            known = ", ".join(sorted(variables)) or "none"
            raise ExpressionError(f"${{{text}}}: nothing named {head!r} is defined yet (defined: {known})")
        value = variables[head]
        for part in rest:
            if not isinstance(value, dict) or part not in value:
                raise ExpressionError(f"${{{text}}}: {part!r} is not in {_describe(value)}")
            value = value[part]
        return value
    return _evaluate(_parse(text), variables, text)


def evaluate_text(text: str, variables: dict):
    """A string with ``${...}``: the value itself if the string is one expression, else interpolated."""
    whole = PATTERN.fullmatch(text)
    if whole:
        return _evaluate_expression(whole.group(1), variables)
    return PATTERN.sub(lambda match: str(_evaluate_expression(match.group(1), variables)), text)


def resolve(value, variables: dict):
    """Substitute expressions everywhere inside a step value (dict keys included)."""
    if isinstance(value, str):
        return evaluate_text(value, variables) if "${" in value else value
    if isinstance(value, Mapping):  # a plain mapping, or a step nested in another (a Step): resolved, a dict
        return {resolve(key, variables): resolve(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, variables) for item in value]
    return value


def substitute_prefix(text: str, prefix: str, values: dict):
    """Load-time substitution of ``${prefix.NAME}`` only (template arguments); others stay."""
    def lookup(match):
        parts = match.group(1).strip().split(".", 1)
        return parts[0] == prefix and len(parts) == 2 and parts[1] in values

    whole = PATTERN.fullmatch(text)
    if whole and lookup(whole):
        return values[whole.group(1).strip().split(".", 1)[1]]
    return PATTERN.sub(lambda m: str(values[m.group(1).strip().split(".", 1)[1]]) if lookup(m) else m.group(0), text)


def named(value, prefix: str) -> tuple[str, ...]:
    """Each NAME of a plain ``${prefix.NAME}`` anywhere inside a value, once, in order (what a step substitutes)."""
    found: list[str] = []
    if isinstance(value, str):
        for match in PATTERN.finditer(value):
            parts = match.group(1).strip().split(".", 1)
            if parts[0] == prefix and len(parts) == 2 and _DOTTED.fullmatch(match.group(1)):
                found.append(parts[1])
    elif isinstance(value, Mapping):
        for key, item in value.items():
            found += named(key, prefix) + named(item, prefix)
    elif isinstance(value, list):
        for item in value:
            found += named(item, prefix)
    return tuple(dict.fromkeys(found))


def check(value) -> list[str]:
    """Syntax problems of every expression inside a value (for lint)."""
    problems: list[str] = []
    if isinstance(value, str):
        for match in PATTERN.finditer(value):
            if _DOTTED.fullmatch(match.group(1)):
                continue
            try:
                _parse(match.group(1))
            except ExpressionError as error:
                problems.append(str(error))
    elif isinstance(value, dict):
        for key, item in value.items():
            problems += check(key) + check(item)
    elif isinstance(value, list):
        for item in value:
            problems += check(item)
    return problems
