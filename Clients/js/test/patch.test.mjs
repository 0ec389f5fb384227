// The JSON Patch applier alone: RFC 6902 Appendix A, then the edges the appendix does not cover.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { applyPatch, parsePointer, jsonEqual, PatchError } from "../reactor-client.js";

// Each example as in RFC 6902 Appendix A: a document, a patch, and the result or `error: true`.
const appendixA = [
  ["A.1 adding an object member", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { baz: "qux", foo: "bar" }],
  ["A.2 adding an array element", { foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
  ["A.3 removing an object member", { baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
  ["A.4 removing an array element", { foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
  ["A.5 replacing a value", { baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
  ["A.6 moving a value",
    { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
    [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
    { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } }],
  ["A.7 moving an array element", { foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
  ["A.8 testing a value: success",
    { baz: "qux", foo: ["a", 2, "c"] },
    [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }],
    { baz: "qux", foo: ["a", 2, "c"] }],
  ["A.9 testing a value: error", { baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }], "error"],
  ["A.10 adding a nested member object", { foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
  ["A.11 ignoring unrecognized elements", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux", xyz: 123 }], { foo: "bar", baz: "qux" }],
  ["A.12 adding to a nonexistent target", { foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }], "error"],
  // A.13 (an operation with two "op" members) cannot be written in JavaScript: JSON.parse keeps the last.
  ["A.14 ~ escape ordering", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }], { "/": 9, "~1": 10 }],
  ["A.15 comparing strings and numbers", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: "10" }], "error"],
  ["A.16 adding an array value", { foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
];

describe("RFC 6902 Appendix A", () => {
  for (const [name, document, patch, expected] of appendixA) {
    test(name, () => {
      const before = structuredClone(document);
      if (expected === "error") assert.throws(() => applyPatch(document, patch), PatchError);
      else assert.deepEqual(applyPatch(document, patch), expected);
      assert.deepEqual(document, before, "the input document is never mutated");
    });
  }
});

describe("JSON Pointer", () => {
  test("tokens are unescaped ~1 first, then ~0", () => {
    assert.deepEqual(parsePointer(""), []);
    assert.deepEqual(parsePointer("/"), [""]);
    assert.deepEqual(parsePointer("/a~1b/m~0n/~01"), ["a/b", "m~n", "~1"]);
  });
  test("a pointer not starting with / and a bad escape are refused", () => {
    assert.throws(() => parsePointer("a"), PatchError);
    assert.throws(() => parsePointer("/a~2"), PatchError);
    assert.throws(() => parsePointer("/a~"), PatchError);
  });
  test("RFC 6901 section 5 examples, read through test ops", () => {
    const doc = { foo: ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8 };
    const cases = [["", doc], ["/foo", ["bar", "baz"]], ["/foo/0", "bar"], ["/", 0], ["/a~1b", 1], ["/c%d", 2], ["/e^f", 3],
      ["/g|h", 4], ["/i\\j", 5], ["/k\"l", 6], ["/ ", 7], ["/m~0n", 8]];
    for (const [path, value] of cases) assert.equal(applyPatch(doc, [{ op: "test", path, value }]), doc, path);
  });
});

describe("operations", () => {
  test("add with - appends, and an index may equal the length", () => {
    assert.deepEqual(applyPatch([1], [{ op: "add", path: "/-", value: 2 }, { op: "add", path: "/2", value: 3 }]), [1, 2, 3]);
  });
  test("array indexes: out of bounds, leading zeros, - outside add, non-numbers are errors", () => {
    for (const op of [
      { op: "add", path: "/3", value: 0 },
      { op: "replace", path: "/2", value: 0 },
      { op: "remove", path: "/-" },
      { op: "replace", path: "/01", value: 0 },
      { op: "remove", path: "/x" },
      { op: "test", path: "/-1", value: 1 },
    ]) assert.throws(() => applyPatch([1, 2], [op]), PatchError, JSON.stringify(op));
  });
  test("remove and replace need an existing member; add creates or replaces one", () => {
    assert.throws(() => applyPatch({}, [{ op: "remove", path: "/a" }]), PatchError);
    assert.throws(() => applyPatch({}, [{ op: "replace", path: "/a", value: 1 }]), PatchError);
    assert.deepEqual(applyPatch({ a: 1 }, [{ op: "add", path: "/a", value: 2 }]), { a: 2 });
  });
  test("the whole document: add and replace swap it, remove leaves null", () => {
    assert.deepEqual(applyPatch({ a: 1 }, [{ op: "replace", path: "", value: [1] }]), [1]);
    assert.equal(applyPatch({ a: 1 }, [{ op: "add", path: "", value: 5 }]), 5);
    assert.equal(applyPatch({ a: 1 }, [{ op: "remove", path: "" }]), null);
  });
  test("copy, and move into its own child is refused", () => {
    const copied = applyPatch({ a: { b: [1] } }, [{ op: "copy", from: "/a", path: "/c" }, { op: "add", path: "/c/b/-", value: 2 }]);
    assert.deepEqual(copied, { a: { b: [1] }, c: { b: [1, 2] } }, "changing the copy leaves the original alone");
    assert.throws(() => applyPatch({ a: { b: 1 } }, [{ op: "move", from: "/a", path: "/a/b" }]), PatchError);
    assert.deepEqual(applyPatch({ a: 1 }, [{ op: "move", from: "/a", path: "/a" }]), { a: 1 });
    assert.throws(() => applyPatch({}, [{ op: "copy", from: "/nope", path: "/a" }]), PatchError);
  });
  test("test compares JSON values: member order does not matter, array order does", () => {
    const doc = { v: { a: [1, { b: null }], c: true } };
    assert.equal(applyPatch(doc, [{ op: "test", path: "/v", value: { c: true, a: [1, { b: null }] } }]), doc);
    assert.throws(() => applyPatch(doc, [{ op: "test", path: "/v/a", value: [{ b: null }, 1] }]), PatchError);
    assert.throws(() => applyPatch(doc, [{ op: "test", path: "/v/c", value: 1 }]), PatchError);
    assert.ok(!jsonEqual({ a: undefined }, { b: undefined }));
    assert.ok(!jsonEqual([], {}));
  });
  test("unknown ops, missing values and non-array patches are errors naming the operation", () => {
    assert.throws(() => applyPatch({}, [{ op: "add", path: "/a", value: 1 }, { op: "frobnicate", path: "/a" }]), (error) => error instanceof PatchError && error.index === 1);
    assert.throws(() => applyPatch({}, [{ op: "add", path: "/a" }]), PatchError);
    assert.throws(() => applyPatch({}, { op: "add" }), PatchError);
  });
  test("a failing patch is atomic and the input is never mutated; untouched sub-trees are shared", () => {
    const doc = { a: { x: 1 }, b: { y: [1, 2] } };
    const frozen = JSON.stringify(doc);
    assert.throws(() => applyPatch(doc, [{ op: "replace", path: "/a/x", value: 2 }, { op: "remove", path: "/nope" }]), PatchError);
    assert.equal(JSON.stringify(doc), frozen);
    const next = applyPatch(doc, [{ op: "add", path: "/b/y/0", value: 0 }]);
    assert.equal(JSON.stringify(doc), frozen);
    assert.equal(next.a, doc.a, "the unchanged sub-tree is the same object");
    assert.notEqual(next.b, doc.b);
  });
  test("__proto__ is an ordinary member, as in JSON", () => {
    const next = applyPatch({}, [{ op: "add", path: "/__proto__", value: { polluted: true } }]);
    assert.equal(Object.getPrototypeOf(next), Object.prototype);
    assert.equal({}.polluted, undefined);
    assert.deepEqual(Object.keys(next), ["__proto__"]);
    assert.throws(() => applyPatch({}, [{ op: "remove", path: "/__proto__" }]), PatchError, "an inherited property is not a member");
    assert.throws(() => applyPatch({}, [{ op: "test", path: "/toString", value: null }]), PatchError);
  });
});

// reactord keeps its document within 512 levels (docs/api.md): a patch at that depth, wrapped in its
// message, must apply here too.
describe("documents at reactord's depth limit", () => {
  const nested = (levels, innermost) => {
    let value = innermost;
    for (let level = 0; level < levels; level += 1) value = { a: value };
    return value;
  };
  test("a replace and a test at 512 levels apply", () => {
    const document = nested(512, 1);
    const path = "/a".repeat(512);
    const message = JSON.parse(JSON.stringify({ type: "patch", version: 2, ops: [{ op: "replace", path, value: 2 }, { op: "test", path, value: 2 }] }));
    assert.deepEqual(applyPatch(document, message.ops), nested(512, 2));
  });
  test("a whole document 512 levels deep replaces the root", () => {
    const value = nested(511, []);
    assert.ok(jsonEqual(applyPatch({}, [{ op: "replace", path: "", value }]), value));
  });
});
