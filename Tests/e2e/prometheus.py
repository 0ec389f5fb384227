"""A small reader of the Prometheus text exposition format (version 0.0.4), strict enough to test
what reactord writes at `GET /metrics`:

- `# HELP` and `# TYPE` lines, one TYPE per family, before the family's samples;
- samples `name{label="value",...} value`, label values with the three escapes (\\\\, \\", \\n);
- every sample belongs to a declared family (a histogram's `_bucket`, `_sum` and `_count`);
- no series twice; counters are not negative;
- histogram buckets ascend by `le`, are cumulative, end with `+Inf`, and `+Inf` equals `_count`.

`scrape(server)` fetches and checks; `Metrics.value(name, **labels)` reads a series (0 when absent:
counters and per-label series appear once they first count something).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from conftest import Reactord, request

CONTENT_TYPE = "text/plain; version=0.0.4"
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class ExpositionError(AssertionError):
    pass


def parse_value(text: str) -> float:
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ExpositionError(f"not a sample value: {text!r}") from None


def parse_labels(text: str, line: str) -> dict[str, str]:
    """`a="x",b="y"` (the inside of the braces)."""
    labels: dict[str, str] = {}
    at = 0
    while at < len(text):
        match = LABEL_NAME.match(text, at)
        if not match or text[match.end():match.end() + 2] != '="':
            raise ExpositionError(f"bad label at {text[at:]!r} in {line!r}")
        name = match.group(0)
        at = match.end() + 2
        value = []
        while True:
            if at >= len(text):
                raise ExpositionError(f"unterminated label value in {line!r}")
            char = text[at]
            if char == "\\":
                escaped = text[at + 1:at + 2]
                if escaped not in ("\\", '"', "n"):
                    raise ExpositionError(f"bad escape \\{escaped} in {line!r}")
                value.append("\n" if escaped == "n" else escaped)
                at += 2
            elif char == '"':
                at += 1
                break
            elif char == "\n":
                raise ExpositionError(f"raw newline in a label value in {line!r}")
            else:
                value.append(char)
                at += 1
        if name in labels:
            raise ExpositionError(f"label {name} twice in {line!r}")
        labels[name] = "".join(value)
        if at < len(text):
            if text[at] != ",":
                raise ExpositionError(f"expected , after a label in {line!r}")
            at += 1
    return labels


@dataclass
class Metrics:
    types: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    # (name, sorted label items) -> value
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)
    text: str = ""

    def value(self, name: str, default: float = 0.0, **labels: str) -> float:
        """The series with exactly these labels; `default` when there is none."""
        return self.samples.get((name, tuple(sorted(labels.items()))), default)

    def has(self, name: str, **labels: str) -> bool:
        return (name, tuple(sorted(labels.items()))) in self.samples

    def series(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Every series of a sample name, by its labels."""
        return {labels: value for (sample, labels), value in self.samples.items() if sample == name}

    def families(self) -> set[str]:
        return set(self.types)

    def __repr__(self) -> str:
        return f"<Metrics {len(self.samples)} samples>\n{self.text}"


def family_of(sample: str, types: dict[str, str]) -> str | None:
    if sample in types:
        return sample
    for suffix in ("_bucket", "_sum", "_count"):
        if sample.endswith(suffix) and types.get(sample[: -len(suffix)]) in ("histogram", "summary"):
            return sample[: -len(suffix)]
    return None


def parse(text: str) -> Metrics:
    """Parses and checks an exposition; raises ExpositionError naming the first problem."""
    metrics = Metrics(text=text)
    if text and not text.endswith("\n"):
        raise ExpositionError("the exposition does not end with a newline")
    seen_samples_of: set[str] = set()
    for line in text.split("\n")[:-1] if text else []:
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise ExpositionError(f"bad metric name in {line!r}")
                if parts[1] == "TYPE":
                    kind = parts[3] if len(parts) == 4 else ""
                    if kind not in TYPES:
                        raise ExpositionError(f"unknown type in {line!r}")
                    if name in metrics.types:
                        raise ExpositionError(f"a second TYPE line for {name}")
                    if name in seen_samples_of:
                        raise ExpositionError(f"TYPE for {name} after its samples")
                    metrics.types[name] = kind
                else:
                    if name in metrics.helps:
                        raise ExpositionError(f"a second HELP line for {name}")
                    metrics.helps[name] = parts[3] if len(parts) == 4 else ""
            continue
        match = NAME.match(line)
        if not match:
            raise ExpositionError(f"not a sample: {line!r}")
        name, rest = match.group(0), line[match.end():]
        labels: dict[str, str] = {}
        if rest.startswith("{"):
            close = _closing_brace(rest, line)
            labels = parse_labels(rest[1:close], line)
            rest = rest[close + 1:]
        if not rest.startswith(" "):
            raise ExpositionError(f"no space before the value in {line!r}")
        fields = rest.split()
        if len(fields) not in (1, 2):
            raise ExpositionError(f"bad value (and timestamp) in {line!r}")
        value = parse_value(fields[0])
        family = family_of(name, metrics.types)
        if family is None:
            raise ExpositionError(f"sample {name} has no TYPE line before it")
        seen_samples_of.add(family)
        key = (name, tuple(sorted(labels.items())))
        if key in metrics.samples:
            raise ExpositionError(f"series {name}{labels} twice")
        if metrics.types[family] == "counter" and not value >= 0:
            raise ExpositionError(f"counter {name}{labels} is {value}")
        metrics.samples[key] = value
    _check_histograms(metrics)
    return metrics


def _closing_brace(rest: str, line: str) -> int:
    quoted = escaped = False
    for index, char in enumerate(rest):
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "}" and not quoted:
            return index
    raise ExpositionError(f"no closing brace in {line!r}")


def _check_histograms(metrics: Metrics) -> None:
    for family, kind in metrics.types.items():
        if kind != "histogram":
            continue
        groups: dict[tuple, list[tuple[float, float]]] = {}
        for labels, value in metrics.series(family + "_bucket").items():
            rest = tuple(item for item in labels if item[0] != "le")
            le = dict(labels).get("le")
            if le is None:
                raise ExpositionError(f"{family}_bucket without le: {labels}")
            groups.setdefault(rest, []).append((parse_value(le), value))
        for rest, buckets in groups.items():
            buckets.sort()
            if buckets[-1][0] != math.inf:
                raise ExpositionError(f"{family}{dict(rest)} has no +Inf bucket")
            counts = [count for _, count in buckets]
            if counts != sorted(counts):
                raise ExpositionError(f"{family}{dict(rest)} buckets are not cumulative: {buckets}")
            total = metrics.samples.get((family + "_count", rest))
            if total is None or (family + "_sum", rest) not in metrics.samples:
                raise ExpositionError(f"{family}{dict(rest)} lacks _count or _sum")
            if total != buckets[-1][1]:
                raise ExpositionError(f"{family}{dict(rest)}: +Inf bucket {buckets[-1][1]} != _count {total}")


def scrape(server: Reactord, headers: dict | None = None) -> Metrics:
    """GET /metrics, asserting a 200 in the Prometheus text format, parsed and checked."""
    answer = request(server, "GET", "/metrics", headers=headers)
    assert answer.status == 200, answer
    content_type = answer.header("Content-Type") or ""
    assert content_type.split(";")[0:2] == ["text/plain", " version=0.0.4"], content_type
    return parse(answer.body.decode("utf-8"))
