"""RFC 6901 JSON Pointers and an RFC 6902 JSON Patch applier.

Why not mutate in place: `apply_patch` never changes the document it is given. It copies only the
containers on the way from the root to each changed place and shares everything else with the
original. That makes a patch atomic for free (a failing op leaves the caller's document as it
was, which the subscription relies on to resume after an error) and lets the subscription hand
out every version of the state without deep copies: a state already yielded is never modified.
The price is that shared sub-trees must not be mutated by callers either; copy before editing.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Mapping

__all__ = [
    "PatchError",
    "PatchConflict",
    "apply_patch",
    "json_equal",
    "parse_pointer",
    "format_pointer",
    "resolve_pointer",
]

JSON = Any


class PatchError(ValueError):
    """The patch cannot be applied: a malformed op or pointer, or a path that is not there."""


class PatchConflict(PatchError):
    """A `test` op found another value (the optimistic-concurrency failure of RFC 6902)."""


# ---------------------------------------------------------------------------------------------
# JSON Pointer (RFC 6901)


def parse_pointer(pointer: str) -> List[str]:
    """The reference tokens of a pointer: `""` is the root (no token), `"/a~1b/0"` is `["a/b", "0"]`."""
    if not isinstance(pointer, str):
        raise PatchError(f"a JSON Pointer is a string, not {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"a JSON Pointer starts with '/': {pointer!r}")
    tokens = []
    for raw in pointer[1:].split("/"):
        # "~" may only start "~0" or "~1"; "~1" is decoded before "~0" so that "~01" is "~1".
        position = raw.find("~")
        while position != -1:
            if raw[position + 1 : position + 2] not in ("0", "1"):
                raise PatchError(f"bad escape in JSON Pointer {pointer!r}")
            position = raw.find("~", position + 2)
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tokens


def format_pointer(tokens: Iterable[Any]) -> str:
    """The pointer for some tokens: the inverse of `parse_pointer`."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def _array_index(token: str, length: int, *, allow_end: bool) -> int:
    """An array index token: decimal without leading zeros, or `-` (one past the end) when adding."""
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or not token.isascii() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    limit = length if allow_end else length - 1
    if index > limit:
        raise PatchError(f"array index {index} is out of range (length {length})")
    return index


def resolve_pointer(document: JSON, pointer: str) -> JSON:
    """The value a pointer designates, or PatchError when there is nothing there."""
    value = document
    for token in parse_pointer(pointer):
        if isinstance(value, dict):
            if token not in value:
                raise PatchError(f"no member {token!r} on the way to {pointer!r}")
            value = value[token]
        elif isinstance(value, list):
            value = value[_array_index(token, len(value), allow_end=False)]
        else:
            raise PatchError(f"{pointer!r} goes through a scalar")
    return value


# ---------------------------------------------------------------------------------------------
# Equality as JSON sees it


def json_equal(a: JSON, b: JSON) -> bool:
    """RFC 6902 equality: numbers by value (1 == 1.0) but never equal to booleans (true != 1),
    arrays in order, objects whatever their member order. Iterative, so that a document as deep as
    reactord keeps (512 levels) compares within Python's recursion limit."""
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if isinstance(a, bool) or isinstance(b, bool):
            if not (isinstance(a, bool) and isinstance(b, bool) and a == b):
                return False
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b:
                return False
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
            return False
        elif a != b:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# JSON Patch (RFC 6902)


def _update(document: JSON, tokens: List[str], change: Callable[[JSON], JSON], pointer: str) -> JSON:
    """A copy of `document` where the value at `tokens` (which must exist) is `change(value)`.

    Only the containers along the path are copied (shallowly); the rest is shared. A loop rather
    than a recursion: a path may be as long as reactord's depth limit (512 tokens).
    """
    copies: List[Any] = []
    keys: List[Any] = []
    node = document
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"no member {token!r} on the way to {pointer!r}")
            copies.append(dict(node))
            keys.append(token)
            node = node[token]
        elif isinstance(node, list):
            index = _array_index(token, len(node), allow_end=False)
            copies.append(list(node))
            keys.append(index)
            node = node[index]
        else:
            raise PatchError(f"{pointer!r} goes through a scalar")
    value = change(node)
    for copy, key in zip(reversed(copies), reversed(keys)):
        copy[key] = value
        value = copy
    return value


def _add(document: JSON, pointer: str, value: JSON) -> JSON:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value

    def put(parent: JSON) -> JSON:
        last = tokens[-1]
        if isinstance(parent, dict):
            copy = dict(parent)
            copy[last] = value
            return copy
        if isinstance(parent, list):
            copy = list(parent)
            copy.insert(_array_index(last, len(parent), allow_end=True), value)
            return copy
        raise PatchError(f"cannot add {pointer!r}: its parent is not an object or array")

    return _update(document, tokens[:-1], put, pointer)


def _remove(document: JSON, pointer: str) -> JSON:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")

    def delete(parent: JSON) -> JSON:
        last = tokens[-1]
        if isinstance(parent, dict):
            if last not in parent:
                raise PatchError(f"cannot remove {pointer!r}: no such member")
            copy = dict(parent)
            del copy[last]
            return copy
        if isinstance(parent, list):
            copy = list(parent)
            del copy[_array_index(last, len(parent), allow_end=False)]
            return copy
        raise PatchError(f"cannot remove {pointer!r}: its parent is not an object or array")

    return _update(document, tokens[:-1], delete, pointer)


def _replace(document: JSON, pointer: str, value: JSON) -> JSON:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value

    def swap(parent: JSON) -> JSON:
        last = tokens[-1]
        if isinstance(parent, dict):
            if last not in parent:
                raise PatchError(f"cannot replace {pointer!r}: no such member")
            copy = dict(parent)
            copy[last] = value
            return copy
        if isinstance(parent, list):
            copy = list(parent)
            copy[_array_index(last, len(parent), allow_end=False)] = value
            return copy
        raise PatchError(f"cannot replace {pointer!r}: its parent is not an object or array")

    return _update(document, tokens[:-1], swap, pointer)


def _member(op: Mapping[str, Any], name: str) -> Any:
    if name not in op:
        raise PatchError(f"a {op.get('op')!r} op needs {name!r}: {dict(op)!r}")
    return op[name]


def _pointer_member(op: Mapping[str, Any], name: str) -> str:
    value = _member(op, name)
    if not isinstance(value, str):
        raise PatchError(f"{name!r} of a {op.get('op')!r} op must be a string: {dict(op)!r}")
    return value


def apply_operation(document: JSON, op: Mapping[str, Any]) -> JSON:
    """The document after one op (a new value; `document` itself is left as it was)."""
    if not isinstance(op, Mapping):
        raise PatchError(f"a JSON Patch op is an object, not {op!r}")
    name = op.get("op")
    path = _pointer_member(op, "path")
    if name == "add":
        return _add(document, path, _member(op, "value"))
    if name == "remove":
        return _remove(document, path)
    if name == "replace":
        return _replace(document, path, _member(op, "value"))
    if name == "move":
        source = _pointer_member(op, "from")
        source_tokens, target_tokens = parse_pointer(source), parse_pointer(path)
        if source_tokens == target_tokens:
            resolve_pointer(document, source)  # must still exist
            return document
        if target_tokens[: len(source_tokens)] == source_tokens:
            raise PatchError(f"cannot move {source!r} into its own child {path!r}")
        value = resolve_pointer(document, source)
        return _add(_remove(document, source), path, value)
    if name == "copy":
        # Sharing the copied value is safe: nothing is ever mutated in place.
        return _add(document, path, resolve_pointer(document, _pointer_member(op, "from")))
    if name == "test":
        expected = _member(op, "value")
        if not json_equal(resolve_pointer(document, path), expected):
            raise PatchConflict(f"test failed: {path!r} is not {expected!r}")
        return document
    raise PatchError(f"unknown JSON Patch op {name!r}")


def apply_patch(document: JSON, ops: Iterable[Mapping[str, Any]]) -> JSON:
    """The document after an RFC 6902 patch, all ops or none.

    Returns a new document that shares unchanged sub-trees with `document`, which is never
    modified; raises PatchError (PatchConflict for a failed `test`) and then nothing happened.
    Members other than those of the op are ignored, as RFC 6902 requires.
    """
    if not isinstance(ops, (list, tuple)):
        raise PatchError(f"a JSON Patch is an array of ops, not {ops!r}")
    for op in ops:
        document = apply_operation(document, op)
    return document
