"""A plugin's answer, kept per boot as detection's is (:mod:`fitwheel.platform.cache`): keyed by
the same boot, driver and device facts, by the plugin (name, version, files) and by every
variable it sees. An entry that cannot be read, has another key or is older than a day is
asked again."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Collection, Mapping
from typing import Any

from fitwheel.platform.cache import TTL_S, HostFiles, cache_key
from fitwheel.plugins.answer import Answer
from fitwheel.plugins.environ import plugin_environment
from fitwheel.plugins.runner import PluginEnv, ask

VERSION = 1


def _key(plugin: PluginEnv, env: Mapping[str, str], refused: Collection[str]) -> Any:
    boot = cache_key(HostFiles(env), sorted(plugin.namespaces))
    if boot is None:
        return None
    seen = plugin_environment(env, plugin.namespaces, plugin.name, "")
    return {
        "boot": boot,
        "plugin": plugin.label,
        "files": dict(sorted(plugin.files.items())),
        "namespaces": dict(sorted(plugin.namespaces.items())),
        "refused": sorted(refused),
        "env": dict(sorted(seen.items())),
    }


def cached_ask(
    plugin: PluginEnv,
    *,
    env: Mapping[str, str],
    timeout: float,
    refused: Collection[str],
    directory: str | os.PathLike[str] | None,
) -> Answer:
    """:func:`fitwheel.plugins.runner.ask`, answered from ``directory`` when this boot already
    asked (None: no cache)."""
    key = _key(plugin, env, refused) if directory is not None else None
    if key is None or directory is None:
        return ask(plugin, env=env, timeout=timeout, refused=refused)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    path = os.path.join(os.fspath(directory), f"{digest}.json")
    found = _load(path, key)
    if found is not None:
        return found
    answer = ask(plugin, env=env, timeout=timeout, refused=refused)
    _store(path, key, answer)
    return answer


def _load(path: str, key: Any) -> Answer | None:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
        if data.get("version") != VERSION or data.get("key") != key:
            return None
        age = time.time() - float(data["created"])
        if age < -60 or age > TTL_S:
            return None
        return {
            str(ns): {str(f): tuple(str(v) for v in vs) for f, vs in fs.items()}
            for ns, fs in data["answer"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _store(path: str, key: Any, answer: Answer) -> None:
    from fitwheel.fs import atomic_write

    payload = {
        "version": VERSION,
        "key": key,
        "created": time.time(),
        "answer": {ns: {f: list(v) for f, v in fs.items()} for ns, fs in answer.items()},
    }
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps(payload).encode("utf-8"))
    except OSError:
        pass  # an answer that cannot be kept is asked again next time
