"""Reading YAML: one reader for the whole project (issue 26), on PyYAML.

* :class:`Loader` is PyYAML's safe loader (plain mappings, lists, strings, numbers and dates; never Python objects)
  with two rules of its own: ``1e6`` and ``9.0e6`` are numbers (YAML 1.2 style; PyYAML's YAML 1.1 wants
  ``9.0e+6``), and a scalar it cannot convert (an impossible date ``2027-02-30``, ``!!timestamp soon``,
  ``!!bool maybe``) stays its text, so that validation reports it against its field, with its line.
* :func:`parse` reads what a user wrote (a scenario, a sweep file) with its rules and keeps the node tree, so that
  every later error names a line (:func:`line_of`). Hostile input is refused as an InputError naming the file: more than
  ``MAX_NODES`` nodes after expanding aliases ("billion laughs"), a duplicate key, nesting too deep for the parser,
  a value it resolves but cannot convert; :func:`check_keys_are_text` refuses keys YAML reads as null, dates or
  numbers. Callers read the bytes with ``planner.inputs.read_bytes_limited`` (at most ``MAX_FILE_BYTES``, regular
  files only) and :func:`decode` them.
* :func:`load_trusted` reads the planner's own data files (the catalog reads about 50 on every command) with the
  same rules on libyaml's parser when PyYAML was built with it (about 10x faster than the pure-Python one, whose
  error messages and marks :func:`parse` keeps).
* :func:`load_value` reads one value of the command line (``--set PATH=VALUE``) with PyYAML's plain safe loader,
  as ``--set`` always has.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from planner.errors import InputError

MAX_FILE_BYTES = 4 * 1024 * 1024  # a YAML input file (a scenario, a sweep file)
MAX_NODES = 200_000  # YAML nodes after alias expansion: stops "billion laughs" files

_TEXT_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")


def _lenient(construct):
    """A constructor that leaves a scalar it cannot convert (an impossible date, ``!!timestamp soon``,
    ``!!bool maybe``) as its string, so that validation reports it against the field, with its line."""

    def build(loader: yaml.SafeLoader, node: yaml.Node):
        try:
            return construct(loader, node)
        except (ValueError, KeyError, AttributeError, TypeError):
            return loader.construct_scalar(node)

    return build


def _harden(cls):
    """``cls`` (a safe loader) with the project's rules: 1e6 as a number, lenient scalar constructors."""
    cls.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))
    for tag, construct in (("timestamp", yaml.SafeLoader.construct_yaml_timestamp),
                           ("bool", yaml.SafeLoader.construct_yaml_bool),
                           ("int", yaml.SafeLoader.construct_yaml_int),
                           ("float", yaml.SafeLoader.construct_yaml_float)):
        cls.add_constructor(f"tag:yaml.org,2002:{tag}", _lenient(construct))
    return cls


@_harden
class Loader(yaml.SafeLoader):
    """SafeLoader that reads 1e6 and 9.0e6 as numbers (YAML 1.2 style; PyYAML's YAML 1.1 wants 9.0e+6) and leaves
    impossible dates (2027-02-30) as strings, so that validation reports them with a line."""


_FAST_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a class chosen at import: Any to a type checker


@_harden
class FastLoader(_FAST_BASE):
    """:class:`Loader`'s rules on libyaml's parser (PyYAML's own where it was built without libyaml)."""


# ---- locations ---------------------------------------------------------------------------------------------------
def fmt_loc(loc) -> str:
    """A field path as the messages write it: ``workloads[1].tier``."""
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


def line_of(root: yaml.Node | None, loc: tuple) -> int | None:
    """Line of the YAML key (or list item) at ``loc``, or of the nearest enclosing one that exists."""
    if root is None:
        return None
    node = target = root
    for seg in loc:
        if isinstance(node, yaml.MappingNode):
            # the last match: after merge keys (<<) are flattened, later keys win
            pairs = ((k, v) for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode) and k.value == str(seg))
            match = next(pairs, None)
            if match is None:
                break
            target, node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
            target = node = node.value[seg]
        else:
            break
    return target.start_mark.line + 1


# ---- guards --------------------------------------------------------------------------------------------------------
def decode(raw: bytes, file: str) -> str:
    """The text of a YAML file's bytes: UTF-8 (a leading byte-order mark dropped), never a binary file."""
    if b"\0" in raw:
        raise InputError("is a binary file; expected a UTF-8 YAML text file", file=file)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("is not UTF-8 text; expected a UTF-8 YAML file", file=file, line=line) from None


def _walk_nodes(root: yaml.Node):
    """(path, key_node, value_node) for every node, each shared (aliased) node once."""
    stack: list[tuple[tuple, Any, Any]] = [((), None, root)]
    seen: set[int] = set()
    while stack:
        path, key, node = stack.pop()
        yield path, key, node
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(((*path, k.value), k, v) for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*path, i), None, v) for i, v in reversed(list(enumerate(node.value))))


def _expanded_size(node: yaml.Node, memo: dict) -> int:
    if id(node) not in memo:
        memo[id(node)] = 1
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [n for kv in node.value for n in kv]
        memo[id(node)] = 1 + sum(_expanded_size(c, memo) for c in children)
    return memo[id(node)]


def _check_nodes(root: yaml.Node, file: str) -> None:
    """At most MAX_NODES nodes after alias expansion, and no key twice in a mapping."""
    if _expanded_size(root, {}) > MAX_NODES:
        raise InputError(f"has more than {MAX_NODES} YAML nodes after expanding aliases", file=file)
    for path, _, node in _walk_nodes(root):
        if not isinstance(node, yaml.MappingNode):
            continue
        lines: dict[str, int] = {}
        for k, _v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE_TAG:
                if k.value in lines:
                    raise InputError(f"duplicate key {k.value!r} (first at line {lines[k.value]})", file=file,
                                     line=k.start_mark.line + 1, field=fmt_loc((*path, k.value)))
                lines[k.value] = k.start_mark.line + 1


def check_keys_are_text(node: yaml.Node | None, file: str, path: str = "") -> None:
    """Every mapping key is text: YAML reads ``~:`` as null, ``2026-01-01:`` as a date and ``5:`` as a number,
    which no field is named. Raises InputError at the key's own line, naming where it is."""
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            check_keys_are_text(item, file, f"{path}[{i}]")
    if not isinstance(node, yaml.MappingNode):
        return
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag not in (_TEXT_TAG, _MERGE_TAG):
            kind = key.tag.rsplit(":", 1)[-1].replace("timestamp", "date")
            article = "an" if kind[0] in "aeiou" else "a"
            raise InputError(f"key {key.value!r} is read as {article} {kind}, not a field name; field names are text "
                             f"(quote it if it is meant as one)", file=file, line=key.start_mark.line + 1,
                             field=path or None)
        name = key.value if isinstance(key, yaml.ScalarNode) else "?"
        check_keys_are_text(value, file, f"{path}.{name}" if path else str(name))


def _yaml_error(exc: yaml.YAMLError, file: str, root: yaml.Node | None, what: str) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if isinstance(exc, yaml.constructor.ConstructorError):
        message = f"{problem}; {what} holds only plain YAML (mappings, lists, strings, numbers, dates)"
    else:
        message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    field = None
    if root is not None and mark is not None:
        field = next((fmt_loc(p) for p, _, n in _walk_nodes(root) if n.start_mark.index == mark.index and p), None)
    return InputError(message, file=file, line=mark.line + 1 if mark else None, field=field)


# ---- readers -------------------------------------------------------------------------------------------------------
def parse(text: str, file: str, what: str = "a scenario") -> tuple[Any, yaml.Node | None]:
    """The document in ``text`` and its node tree (None, None for an empty one), read with :class:`Loader`'s rules
    and the guards above; ``file`` names it in errors, ``what`` names what it holds (``a scenario``, ``a sweep
    file``). libyaml's parser reads it where PyYAML has it (about 10x faster); a text it refuses is read again by
    PyYAML's own, whose error names the line and the context."""
    loader, root = None, None
    try:
        loader, root = _nodes(text)
        if root is None:
            return None, None
        _check_nodes(root, file)
        return loader.construct_document(root), root
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, file, root, what) from None
    except RecursionError:
        raise InputError("is nested too deeply", file=file) from None
    except (ValueError, KeyError, AttributeError, TypeError) as exc:  # a value PyYAML resolved but cannot convert
        raise InputError(f"cannot read a value ({type(exc).__name__}: {exc})", file=file) from None
    finally:
        if loader is not None:
            loader.dispose()


def _nodes(text: str):
    """(loader, node tree) of ``text``: libyaml's where it reads the text, else PyYAML's (whose error propagates;
    its reader rejects control characters)."""
    if hasattr(yaml, "CSafeLoader"):  # FastLoader is built on libyaml's parser
        fast = FastLoader(text)
        try:
            return fast, fast.get_single_node()
        except (yaml.YAMLError, RecursionError, ValueError, TypeError):
            fast.dispose()
    loader = Loader(text)
    return loader, loader.get_single_node()


def load_trusted(path: str | Path) -> Any:
    """A data file the planner ships (the catalog), read with :class:`FastLoader`; a YAML error propagates."""
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=FastLoader)  # noqa: S506 - a safe loader


def load_value(text: str) -> Any:
    """One YAML value of the command line (``--set``), read as a scenario's are (``Loader``: ``9e6`` is a
    number, as the docs' own example ``capex_usd=9e6`` needs); a yaml.YAMLError propagates."""
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader
