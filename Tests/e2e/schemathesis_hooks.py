"""Schemathesis extensions for Tests/e2e/test_openapi.py (loaded through SCHEMATHESIS_HOOKS).

- `GET /history` answers `application/x-ndjson`, which schemathesis cannot read by itself: each
  line is parsed as JSON and the lines are handed to the response check as a list, which is what
  docs/openapi.yaml's schema for that media type describes.
- `POST /events?mode=prune` answers 200 to an array of events some or all of which are invalid (it
  reports them in `rejected`): that is its purpose, so a schema-violating array is sent in strict
  mode, where it must be refused.
- A check that a schema-valid event is never refused as malformed (the 422s that
  positive_data_acceptance lets through must come from the state, not from decoding).
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis.core.parameters import ParameterLocation


@schemathesis.deserializer("application/x-ndjson")
def ndjson(ctx, response):
    text = response.content.decode("utf-8")
    if text and not text.endswith("\n"):
        raise ValueError("NDJSON must end every line, the last one included, with a newline")
    return [json.loads(line) for line in text.split("\n")[:-1]]


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.method.upper() != "POST" or case.path != "/events" or not isinstance(case.body, list):
        return
    meta = case.meta
    query = case.query if isinstance(case.query, dict) else None
    if meta is not None and meta.is_negative_at(ParameterLocation.BODY) and query and query.get("mode") == "prune":
        query["mode"] = "strict"


# Problems that say the request, not the state, was wrong: a schema-valid event must never get them.
_REQUEST_PROBLEMS = {"/problems/invalid-event", "/problems/unknown-event-type", "/problems/malformed-json"}


@schemathesis.check
def schema_valid_events_are_decoded(ctx, response, case):
    """POST /events may refuse a schema-valid event (the state decides: 422 `event-rejected`, 409),
    so the schemathesis config accepts 422 there; but never because the server read the event
    differently from the spec (`invalid-event`, `unknown-event-type`)."""
    if case.method.upper() != "POST" or case.path != "/events" or response.status_code not in (400, 422):
        return None
    meta = case.meta
    if meta is None or meta.generation.mode.is_negative:
        return None
    try:
        kind = json.loads(response.content).get("type")
    except (ValueError, AttributeError):
        return None
    detail = json.loads(response.content).get("detail", "")
    # RFC 6902 section 4.4: `from` must not be a proper prefix of `path` (no move into one's own
    # child). JSON Schema cannot say that; the server refuses such a patch as an invalid event.
    if kind == "/problems/invalid-event" and "into its own child" in detail:
        return None
    if kind in _REQUEST_PROBLEMS:
        raise AssertionError(
            f"a schema-valid request was refused as {kind}: the spec's event schema and the server's "
            f"decoding disagree\n{response.content[:500]!r}"
        )
    return None
