"""The script fitwheel runs with a plugin environment's interpreter to ask variant provider
plugins (variantlib 0.2's interface) what this machine supports.

It imports nothing but the standard library (the plugin environment holds no fitwheel) and is
run by its path: ``python -I _driver.py --answer FILE [--describe] [--dist NAME]
[--plugin NAMESPACE=REF ...]``. The answer goes to ``FILE`` as JSON, never to stdout: plugins
print there. With ``--describe`` the plugins are only loaded and their namespaces said; else
each plugin's ``get_supported_configs()`` is called.

A plugin reference is ``module[:attr.path]``; the object it names (a module, a class, any
object) is never instantiated. Its namespace is its ``namespace`` attribute, else the name the
plugin is registered under (the ``variant_plugins`` entry point, or the ``NAMESPACE=`` given).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

ENTRY_POINT_GROUP = "variant_plugins"
#: the most a plugin may print (stdout and stderr together) before it is stopped
PRINT_LIMIT = 8 << 20


class OutputFlood(BaseException):
    """The plugin printed more than :data:`PRINT_LIMIT`."""


class _Bounded:
    """A text stream that passes writes on until the shared budget is spent."""

    written = 0

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        _Bounded.written += len(text)
        if _Bounded.written > PRINT_LIMIT:
            raise OutputFlood(f"it printed more than {PRINT_LIMIT >> 20} MiB")
        return int(self._inner.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _load(ref: str) -> Any:
    module_name, _, attrs = ref.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for part in attrs.strip().split(".") if attrs.strip() else []:
        obj = getattr(obj, part)
    return obj


def _listed(dist: str) -> list[tuple[str, str]]:
    """The (name, reference) of each plugin ``dist`` registers, else its module by name."""
    from importlib import metadata

    try:
        points = metadata.distribution(dist).entry_points
    except metadata.PackageNotFoundError:
        points = ()  # type: ignore[assignment]
    found = [(ep.name, ep.value) for ep in points if ep.group == ENTRY_POINT_GROUP]
    return found or [("", dist.replace("-", "_").replace(".", "_"))]


def _plain(value: Any) -> Any:
    """``value`` as JSON can carry it (anything else as its repr, which the parent refuses)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)


def _configs(obj: Any) -> list[dict[str, Any]]:
    out = []
    for config in obj.get_supported_configs():
        item = {
            "name": _plain(getattr(config, "name", None)),
            "values": _plain(list(getattr(config, "values", None) or [])),
            "multi_value": _plain(getattr(config, "multi_value", False)),
        }
        if getattr(config, "namespace", None) is not None:
            item["namespace"] = _plain(config.namespace)
        out.append(item)
    return out


def _ask(plugins: list[tuple[str, str]], describe: bool) -> list[dict[str, Any]]:
    answers = []
    for registered, ref in plugins:
        obj = _load(ref)
        declared = getattr(obj, "namespace", None)
        namespace = declared if isinstance(declared, str) and declared else registered
        answer: dict[str, Any] = {"ref": ref, "namespace": _plain(namespace)}
        if not describe:
            answer["configs"] = _configs(obj)
        answers.append(answer)
    return answers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answer", required=True)
    parser.add_argument("--describe", action="store_true")
    parser.add_argument("--dist")
    parser.add_argument("--plugin", action="append", default=[])
    args = parser.parse_args(argv)
    plugins: list[tuple[str, str]] = []
    for given in args.plugin:
        namespace, _, ref = given.rpartition("=")
        plugins.append((namespace, ref))
    if args.dist:
        plugins += _listed(args.dist)
    sys.stdout = _Bounded(sys.stdout)
    sys.stderr = _Bounded(sys.stderr)
    try:
        result: dict[str, Any] = {"plugins": _ask(plugins, args.describe)}
        code = 0
    except BaseException as exc:  # every failure is the plugin's, and said
        said = str(exc) if isinstance(exc, OutputFlood) else f"{type(exc).__name__}: {exc}"
        result = {"error": said[:2000]}
        code = 3
    tmp = args.answer + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    os.replace(tmp, args.answer)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
