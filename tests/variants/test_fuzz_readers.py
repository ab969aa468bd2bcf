"""Fuzzing the readers: whatever the input, the only failure is a VariantFormatError.

Example counts come from ``FITWHEEL_FUZZ_EXAMPLES`` (default 300 for the quick tests; the
``slow`` variant runs many more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import dump_variant_info
from tests.variants.strategies import PUBLISHED_DIR, PUBLISHED_FILES, fuzz_examples

WHEELNEXT = "https://variants-schema.wheelnext.dev"

HAND_WRITTEN: list[dict[str, Any]] = [
    {
        "$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": ["nvidia", "blas", "hw"]},
        "providers": {
            "nvidia": {"requires": ["nvidia-provider>=1"], "plugin-api": "nv:P", "optional": True},
            "blas": {
                "static-properties": {"vendor": ["mkl", "openblas"], "abi": ["a1"]},
                "feature-order": ["abi", "vendor"],
            },
            "hw": {"builtin": "hw"},
        },
        "variants": {
            "cu12": {"nvidia": {"sm_arch": ["80_real", "90_real"]}, "blas": {"vendor": ["mkl"]}},
            "null": {},
        },
    },
    {
        "$schema": f"{WHEELNEXT}/peps/825/v0.1.0.json",
        "default-priorities": {
            "namespace": ["gpu", "cpu"],
            "feature": {"gpu": ["cuda"]},
            "property": {"cpu": {"level": ["v3", "v2"]}},
        },
        "variants": {"fast": {"gpu": {"cuda": ["12.0"]}}, "null": {}},
    },
    {
        "$schema": f"{WHEELNEXT}/v0.0.3.json",
        "default-priorities": {"namespace": ["cpu", "blas"], "feature": {"blas": ["ilp", "v"]}},
        "providers": {
            "cpu": {"requires": ["cpu-provider"], "enable-if": "os_name == 'posix'"},
            "blas": {"install-time": False},
        },
        "static-properties": {"blas": {"v": ["mkl"], "ilp": ["64"]}},
        "variants": {"m": {"blas": {"v": ["mkl"]}, "cpu": {"level": ["v3"]}}},
    },
]


def _seeds() -> list[Any]:
    seeds: list[Any] = [
        json.loads((Path(PUBLISHED_DIR) / name).read_text()) for name in PUBLISHED_FILES[:3]
    ]
    return seeds + HAND_WRITTEN


SEEDS = _seeds()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.sampled_from(["", "null", "a", "A", "1.0", "nvidia", "x :: y", "00000000", "-"])
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    doc = json.loads(json.dumps(draw(st.sampled_from(SEEDS))))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "insert", "case", "duplicate"]))
        if not path:
            if action == "replace":
                doc = draw(json_values)
            continue
        parent, last = _get(doc, path[:-1]), path[-1]
        if action == "replace":
            parent[last] = draw(json_values)
        elif action == "delete":
            del parent[last]
        elif action == "insert" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["null", "Upper", "x", "feature", "property"]))] = draw(
                json_values
            )
        elif action == "insert" and isinstance(parent, list):
            parent.insert(last, draw(json_values))
        elif action == "case" and isinstance(parent[last], str):
            parent[last] = parent[last].upper()
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(parent[last])
    return doc


def _check(raw: str | bytes) -> None:
    """Read ``raw``; if that works, writing and re-reading must work or fail cleanly too."""
    for kind in ("index", "wheel"):
        try:
            info = loads_variant_info(raw, "fuzz-variants.json", kind)  # type: ignore[arg-type]
        except VariantFormatError as exc:
            assert exc.source == "fuzz-variants.json"
            assert str(exc).startswith("fuzz-variants.json")
            continue
        try:
            text = dump_variant_info(info, allow_lossy=True)
        except VariantFormatError:
            continue
        again = loads_variant_info(text, "again")
        assert dump_variant_info(again) == text


def _mutate_bytes(raw: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    data = bytearray(raw)
    for pos, delete, insert in edits:
        pos %= len(data) + 1
        data[pos : pos + delete] = insert
    return bytes(data)


_QUICK = settings(
    max_examples=fuzz_examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_HEAVY = settings(
    max_examples=fuzz_examples(5000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_QUICK
@given(st.binary(max_size=512))
def test_raw_bytes(raw: bytes) -> None:
    _check(raw)


@_QUICK
@given(mutated_documents())
def test_mutated_documents(doc: Any) -> None:
    _check(json.dumps(doc))


@_QUICK
@given(
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 3), st.binary(max_size=3)), max_size=4),
)
def test_byte_edits_of_valid_files(seed: Any, edits: list[tuple[int, int, bytes]]) -> None:
    _check(_mutate_bytes(json.dumps(seed, indent=4).encode(), edits))


@pytest.mark.slow
@_HEAVY
@given(
    st.one_of(
        mutated_documents().map(json.dumps),
        st.binary(max_size=4096),
        st.tuples(
            st.sampled_from(SEEDS),
            st.lists(
                st.tuples(st.integers(0, 5000), st.integers(0, 8), st.binary(max_size=8)),
                max_size=12,
            ),
        ).map(lambda t: _mutate_bytes(json.dumps(t[0]).encode(), t[1])),
    )
)
def test_heavy_mixed_fuzz(raw: str | bytes) -> None:
    _check(raw)
