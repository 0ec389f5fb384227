"""The RFC 6902 applier: every example of RFC 6902 Appendix A, then the corners the subscription
relies on (atomicity, no mutation of the input, strict JSON equality, pointer escapes)."""

from __future__ import annotations

import copy
import json

import pytest

from reactor_client.patch import (
    PatchConflict,
    PatchError,
    apply_patch,
    format_pointer,
    json_equal,
    parse_pointer,
    resolve_pointer,
)


def same_json(a, b) -> bool:
    """Equal as JSON text: tells 1 from 1.0 from true, unlike ==."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# RFC 6902 Appendix A: (section, document, patch, result). A.13 (a duplicated "op" member) is a
# JSON-text problem that cannot be expressed once parsed into a dict, so it is not here.
APPENDIX_A = [
    ("A.1 adding an object member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    ("A.2 adding an array element", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
    ("A.3 removing an object member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ("A.4 removing an array element", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    ("A.5 replacing a value", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
    (
        "A.6 moving a value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7 moving an array element",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8 testing a value: success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        "A.10 adding a nested member object",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11 ignoring unrecognized elements",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    ("A.14 ~ escape ordering", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ("A.16 adding an array value", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
]

APPENDIX_A_ERRORS = [
    ("A.9 testing a value: error", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], PatchConflict),
    ("A.12 adding to a nonexistent target", {"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], PatchError),
    ("A.15 comparing strings and numbers", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], PatchConflict),
]


@pytest.mark.parametrize("name, document, patch, result", APPENDIX_A, ids=[case[0] for case in APPENDIX_A])
def test_rfc6902_appendix_a(name, document, patch, result):
    original = copy.deepcopy(document)
    assert same_json(apply_patch(document, patch), result)
    assert same_json(document, original), "the input document must not be modified"


@pytest.mark.parametrize("name, document, patch, error", APPENDIX_A_ERRORS, ids=[case[0] for case in APPENDIX_A_ERRORS])
def test_rfc6902_appendix_a_errors(name, document, patch, error):
    original = copy.deepcopy(document)
    with pytest.raises(error):
        apply_patch(document, patch)
    assert same_json(document, original)


def test_a_failing_patch_applies_nothing_and_keeps_the_input():
    document = {"a": {"b": [1, 2]}, "n": 1}
    original = copy.deepcopy(document)
    patch = [
        {"op": "replace", "path": "/n", "value": 2},
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "remove", "path": "/missing"},
    ]
    with pytest.raises(PatchError):
        apply_patch(document, patch)
    assert same_json(document, original)


def test_unchanged_subtrees_are_shared_and_changed_ones_copied():
    document = {"left": {"deep": [1, 2, 3]}, "right": {"x": 1}}
    result = apply_patch(document, [{"op": "replace", "path": "/right/x", "value": 2}])
    assert result["left"] is document["left"]  # shared: no deep copy per patch
    assert result["right"] is not document["right"] and document["right"] == {"x": 1}


def test_root_operations():
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert apply_patch({"a": 1}, [{"op": "add", "path": "", "value": None}]) is None
    with pytest.raises(PatchError):
        apply_patch({"a": 1}, [{"op": "remove", "path": ""}])
    assert apply_patch(None, [{"op": "test", "path": "", "value": None}]) is None


def test_move_and_copy_corners():
    document = {"a": {"b": 1}, "list": [1, 2, 3]}
    assert apply_patch(document, [{"op": "move", "from": "/a", "path": "/a"}]) == document
    with pytest.raises(PatchError):
        apply_patch(document, [{"op": "move", "from": "/a", "path": "/a/b/c"}])
    copied = apply_patch(document, [{"op": "copy", "from": "/a", "path": "/c"}, {"op": "replace", "path": "/c/b", "value": 2}])
    assert copied == {"a": {"b": 1}, "list": [1, 2, 3], "c": {"b": 2}}
    assert document["a"] == {"b": 1}, "a copy later changed must not change its source"
    assert apply_patch(document, [{"op": "move", "from": "/list/0", "path": "/list/-"}])["list"] == [2, 3, 1]


@pytest.mark.parametrize(
    "op",
    [
        {"op": "add", "path": "/list/4", "value": 0},  # past the end
        {"op": "add", "path": "/list/01", "value": 0},  # leading zero
        {"op": "replace", "path": "/list/-", "value": 0},  # "-" only for add
        {"op": "remove", "path": "/list/3"},
        {"op": "replace", "path": "/missing", "value": 0},
        {"op": "add", "path": "/s/x", "value": 0},  # through a scalar
        {"op": "add", "path": "nope", "value": 0},  # not a pointer
        {"op": "add", "path": "/a~2", "value": 0},  # bad escape
        {"op": "add", "path": "/x"},  # no value
        {"op": "move", "path": "/x"},  # no from
        {"op": "copy", "from": "/missing", "path": "/x"},
        {"op": "frobnicate", "path": "/x"},
        {"path": "/x", "value": 1},
    ],
)
def test_invalid_ops_raise_patch_error(op):
    with pytest.raises(PatchError):
        apply_patch({"list": [1, 2, 3], "s": "text"}, [op])


def test_add_with_a_null_value_is_not_a_missing_value():
    assert apply_patch({}, [{"op": "add", "path": "/x", "value": None}]) == {"x": None}


def test_json_equality_is_strict_about_kinds():
    assert json_equal(1, 1.0)  # RFC 6902: numbers compare by value
    assert not json_equal(1, True) and not json_equal(0, False) and not json_equal(None, False)
    assert not json_equal("1", 1)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    with pytest.raises(PatchConflict):
        apply_patch({"flag": True}, [{"op": "test", "path": "/flag", "value": 1}])


def test_pointers():
    assert parse_pointer("") == []
    assert parse_pointer("/") == [""]
    assert parse_pointer("/a~1b/~0c/~01") == ["a/b", "~c", "~1"]
    assert format_pointer(["a/b", "~c", 0]) == "/a~1b/~0c/0"
    assert resolve_pointer({"a/b": [None, {"~": 5}]}, "/a~1b/1/~0") == 5
    with pytest.raises(PatchError):
        resolve_pointer({"a": [1]}, "/a/1")


def _nested(levels, innermost):
    value = innermost
    for _ in range(levels):
        value = {"a": value}
    return value


def test_a_patch_at_reactords_depth_limit_applies():
    # reactord keeps its document within 512 levels (docs/api.md); its messages wrap a few more.
    path = "/a" * 512
    message = json.loads(json.dumps({"type": "patch", "version": 2, "ops": [
        {"op": "replace", "path": path, "value": 2}, {"op": "test", "path": path, "value": 2}]}))
    assert json_equal(apply_patch(_nested(512, 1), message["ops"]), _nested(512, 2))
    whole = _nested(511, [])
    assert json_equal(apply_patch({}, [{"op": "replace", "path": "", "value": whole}]), whole)
