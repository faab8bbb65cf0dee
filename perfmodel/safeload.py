"""One safe way to read every file a user hands perfmodel: device profiles, kernel specs, budgets, baselines,
measured datasets.

Every failure is a ``PerfmodelError`` of the caller's class (``DeviceError`` for a device profile, ``SpecError``
for a spec, ...) whose message names the file and, where it can, the line:

- the path must name a regular file: a directory, a FIFO, ``/dev/zero`` or a socket is refused *before* it is
  opened for reading (a FIFO would block, ``/dev/zero`` never ends); a path that is too long or runs through a
  regular file is a clear error, not an ``OSError``;
- the file may not exceed :data:`MAX_BYTES` (``PERFMODEL_MAX_INPUT_BYTES`` overrides it);
- the text must be UTF-8: the error names the line and byte offset of the first bad byte;
- YAML is parsed with the safe loader, at most :data:`MAX_DEPTH` levels of nesting, at most :data:`MAX_ALIASES`
  aliases, and at most :data:`MAX_NODES` nodes once aliases are expanded (a "billion laughs" anchor bomb is
  refused while composing, before anything is built), and no alias cycles;
- JSON is checked for nesting depth before it is parsed (never a ``RecursionError``).
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import Any

import yaml

from perfmodel.errors import Location, PerfmodelError

MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 1_000
MAX_NODES = 200_000
MAX_SHOWN_PATH = 120


def max_bytes() -> int:
    raw = os.environ.get("PERFMODEL_MAX_INPUT_BYTES")
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            pass
    return MAX_BYTES


def shown(path: str | os.PathLike) -> str:
    """The path as messages show it: relative to the working folder when inside it, shortened when huge."""
    text = os.fspath(path)
    try:
        if os.path.isabs(text) and len(text) < 4096:
            rel = os.path.relpath(text)
            if not rel.startswith(".."):
                text = rel
    except (ValueError, OSError):
        pass
    if len(text) > MAX_SHOWN_PATH:
        text = f"{text[:60]}...{text[-40:]} ({len(text):,} characters)"
    return text


def _fail(error: type[PerfmodelError], label: str, message: str, line: int | None = None) -> PerfmodelError:
    where = f"{label}:{line}" if line is not None else label
    return error(f"{where}: {message}", location=Location(file=label, line=line))


def os_problem(err: OSError, what: str) -> str:
    """A short reason for an ``OSError`` met while opening ``what``."""
    if err.errno == errno.ENAMETOOLONG:
        return "the path is too long for the file system (a file or folder name over 255 bytes, or the whole " \
               "path over 4,096)"
    if err.errno == errno.ENOENT:
        return f"no such {what}"
    if err.errno == errno.ENOTDIR:
        return "a part of the path before the file name is not a folder"
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: cannot read the {what}"
    if err.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    return f"cannot read the {what} ({err.strerror or err})"


def check_regular_file(path: str | os.PathLike, *, error: type[PerfmodelError] = PerfmodelError,
                       what: str = "file", not_found: str | None = None) -> os.stat_result:
    """``stat`` of ``path`` when it is a regular file within the size cap, else ``error``."""
    label = shown(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise _fail(error, label, not_found or f"no such {what}") from None
    except (OSError, ValueError) as err:  # ValueError: an embedded NUL byte
        reason = os_problem(err, what) if isinstance(err, OSError) else "the path contains a NUL byte"
        raise _fail(error, label, reason) from None
    if stat.S_ISDIR(info.st_mode):
        raise _fail(error, label, f"is a folder, not a {what}")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else
                "a character device" if stat.S_ISCHR(info.st_mode) else
                "a block device" if stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise _fail(error, label, f"is {kind}, not a regular file; give a {what} saved as a file")
    limit = max_bytes()
    if info.st_size > limit:
        raise _fail(error, label, f"the {what} is {info.st_size:,} bytes, more than the {limit:,}-byte limit for "
                                  f"an input file (PERFMODEL_MAX_INPUT_BYTES raises it)")
    return info


def read_bytes(path: str | os.PathLike, *, error: type[PerfmodelError] = PerfmodelError, what: str = "file",
               not_found: str | None = None) -> bytes:
    check_regular_file(path, error=error, what=what, not_found=not_found)
    label = shown(path)
    limit = max_bytes()
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise _fail(error, label, not_found or f"no such {what}") from None
    except OSError as err:
        raise _fail(error, label, os_problem(err, what)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _fail(error, label, f"is not a regular file; give a {what} saved as a file")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(limit + 1)
    except OSError as err:
        raise _fail(error, label, os_problem(err, what)) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise _fail(error, label, f"the {what} is more than the {limit:,}-byte limit for an input file")
    return data


def decode(data: bytes, label: str, *, error: type[PerfmodelError] = PerfmodelError, what: str = "file",
           latin1: bool = False) -> str:
    """UTF-8 text of ``data`` (a leading byte-order mark dropped); the error names line and byte offset.
    ``latin1``: text that is not UTF-8 is read as ISO 8859-1 instead (C sources from before UTF-8, whose
    comments say (c) in Latin-1; the compiler reads the same bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if latin1:
            return decode(data.decode("latin-1").encode("utf-8"), label, error=error, what=what)
        line = data.count(b"\n", 0, err.start) + 1
        bad = data[err.start:err.start + 4].hex(" ")
        raise _fail(error, label, f"the {what} is not valid UTF-8 text: byte offset {err.start:,} "
                                  f"(bytes {bad}) {err.reason}; save it as UTF-8", line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        offset = text.index("\x00")
        raise _fail(error, label, f"the {what} contains a NUL character (character offset {offset:,}); "
                                  "it looks like a binary file", text.count("\n", 0, offset) + 1)
    return text


def read_text(path: str | os.PathLike, *, error: type[PerfmodelError] = PerfmodelError, what: str = "file",
              not_found: str | None = None, latin1: bool = False) -> str:
    """The UTF-8 text of a user's file, with every check of this module's docstring (``latin1``: see decode)."""
    return decode(read_bytes(path, error=error, what=what, not_found=not_found), shown(path), error=error,
                  what=what, latin1=latin1)


# ---------------------------------------------------------------------------------------------------------
# YAML


class _Limit(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


try:   # libyaml's scanner and parser (C, about 5x faster), under PyYAML's own composer (the limits below)
    from yaml._yaml import CParser as _Parser

    class _SafeBase(yaml.composer.Composer, _Parser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        def __init__(self, stream: str):
            _Parser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
except ImportError:  # pragma: no cover - a PyYAML built without libyaml
    _SafeBase = yaml.SafeLoader


class _LimitedLoader(_SafeBase):
    """The safe loader, refusing deep nesting, many aliases and alias cycles while it composes."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._open: set[str] = set()

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Limit(f"more than {MAX_ALIASES:,} aliases (*name); refused as a possible alias bomb",
                             event.start_mark)
            if event.anchor in self._open:
                raise _Limit(f"alias *{event.anchor} refers to a node that contains it (a cycle)",
                             event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Limit(f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.discard(anchor)


def _expanded_size(root: yaml.Node) -> None:
    """Raise ``_Limit`` when the document, aliases expanded, has more than MAX_NODES nodes."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child, depth + 1)
                if total > MAX_NODES:
                    break
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                total += size(k, depth + 1) + size(v, depth + 1)
                if total > MAX_NODES:
                    break
        if total > MAX_NODES:
            raise _Limit(f"more than {MAX_NODES:,} values once aliases are expanded; refused as a possible "
                         "alias bomb (\"billion laughs\")", node.start_mark)
        sizes[key] = total
        return total

    size(root, 0)


def parse_yaml(text: str, label: str, *, error: type[PerfmodelError] = PerfmodelError,
               invalid: str = "not valid YAML", with_node: bool = False) -> Any:
    """The safe-loaded YAML document (``(data, root node)`` with ``with_node``); errors name file:line:col."""
    loader = None
    try:
        loader = _LimitedLoader(text)
        node = loader.get_single_node()
        if node is not None:
            _expanded_size(node)
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as err:  # a control character YAML does not allow
        line = text.count("\n", 0, err.position) + 1
        raise error(f"{label}:{line}: {invalid}: character {err.character!r} (offset {err.position:,}) is not "
                    "allowed in YAML", location=Location(file=label, line=line)) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        line = mark.line + 1 if mark is not None else None
        where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark is not None else label
        raise error(f"{where}: {invalid}: {problem}", location=Location(file=label, line=line)) from None
    except (RecursionError, MemoryError, OverflowError, ValueError, TypeError) as err:
        # the safe constructor on odd scalars (a huge exponent, a bad timestamp) or a pathological document
        raise error(f"{label}: {invalid}: {type(err).__name__}: {err}", location=Location(file=label)) from None
    finally:
        if loader is not None:
            loader.dispose()
    return (data, node) if with_node else data


def load_yaml(path: str | os.PathLike, *, error: type[PerfmodelError] = PerfmodelError, what: str = "file",
              not_found: str | None = None, invalid: str = "not valid YAML", with_node: bool = False) -> Any:
    return parse_yaml(read_text(path, error=error, what=what, not_found=not_found), shown(path), error=error,
                      invalid=invalid, with_node=with_node)


# ---------------------------------------------------------------------------------------------------------
# JSON

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def json_depth_problem(text: str) -> tuple[int, int] | None:
    """(depth, line) of the first bracket nested deeper than MAX_DEPTH, or None."""
    depth = 0
    stripped = _JSON_STRING.sub('""', text)
    if stripped.count("[") + stripped.count("{") <= MAX_DEPTH:
        return None
    line = 1
    for char in stripped:
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return depth, line
        elif char in "]}":
            depth -= 1
        elif char == "\n":
            line += 1
    return None


def parse_json(text: str, label: str, *, error: type[PerfmodelError] = PerfmodelError,
               invalid: str = "not valid JSON") -> Any:
    problem = json_depth_problem(text)
    if problem is not None:
        raise _fail(error, label, f"{invalid}: nested more than {MAX_DEPTH} levels deep", problem[1])
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{label}:{err.lineno}:{err.colno}: {invalid}: {err.msg}",
                    location=Location(file=label, line=err.lineno, col=err.colno)) from None
    except ValueError as err:  # e.g. an integer literal with more digits than Python converts
        raise _fail(error, label, f"{invalid}: {err}") from None
    except RecursionError:
        raise _fail(error, label, f"{invalid}: nested too deeply") from None


def load_json(path: str | os.PathLike, *, error: type[PerfmodelError] = PerfmodelError, what: str = "file",
              not_found: str | None = None, invalid: str = "not valid JSON") -> Any:
    return parse_json(read_text(path, error=error, what=what, not_found=not_found), shown(path), error=error,
                      invalid=invalid)


def path_error(path: str | os.PathLike, err: OSError, *, error: type[PerfmodelError] = PerfmodelError,
               what: str = "file") -> PerfmodelError:
    """A ``PerfmodelError`` for an ``OSError`` met on ``path`` (e.g. ENAMETOOLONG from ``Path.is_file``)."""
    return _fail(error, shown(path), os_problem(err, what))


__all__ = ["MAX_ALIASES", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "check_regular_file", "decode", "load_json",
           "load_yaml", "parse_json", "parse_yaml", "path_error", "read_bytes", "read_text", "shown"]
