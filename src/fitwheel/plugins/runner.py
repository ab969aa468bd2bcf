"""Running a plugin: the plugin environment's interpreter runs fitwheel's driver script
(``_driver.py``) in a child process (:func:`fitwheel.proc.run`), with a time bound, stdin closed,
its output bounded and kept only for the error message, its working folder and ``HOME`` in a
temporary folder, and a filtered environment (:mod:`fitwheel.plugins.environ`). The answer comes
back in a file of its own, never on stdout."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from fitwheel import proc
from fitwheel._values import Frozen
from fitwheel.plugins.answer import Answer, checked, described
from fitwheel.plugins.environ import plugin_environment
from fitwheel.plugins.errors import PluginError

DRIVER = Path(__file__).with_name("_driver.py")
#: the default time bound of one plugin run, seconds (``FITWHEEL_PLUGIN_TIMEOUT`` or the
#: ``[plugins] timeout`` setting change it)
DEFAULT_TIMEOUT = 30.0
#: what is kept of a plugin's stdout and stderr (for the error message only)
OUTPUT_KEPT = 64 * 1024
#: the largest answer file read
ANSWER_LIMIT = 1 << 20


class PluginEnv(Frozen):
    """An installed plugin: its name and version (``label``: ``name==version``), the
    interpreter of its isolated environment, its files' sha256 (file name -> hex digest), its
    plugins (namespace -> ``module:attr`` reference) and where its files came from (file name
    -> URL)."""

    __slots__ = ("files", "name", "namespaces", "python", "urls", "version")
    name: str
    version: str
    python: Path
    files: Mapping[str, str]
    namespaces: Mapping[str, str]
    urls: Mapping[str, str]

    def __init__(
        self,
        name: str,
        version: str,
        python: Path,
        files: Mapping[str, str],
        namespaces: Mapping[str, str],
        urls: Mapping[str, str] | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "python", python)
        object.__setattr__(self, "files", dict(files))
        object.__setattr__(self, "namespaces", dict(namespaces))
        object.__setattr__(self, "urls", dict(urls or {}))

    @property
    def label(self) -> str:
        return f"{self.name}=={self.version}"


def describe(name: str, python: Path, *, env: Mapping[str, str], timeout: float) -> dict[str, str]:
    """The plugins the installed distribution ``name`` registers: namespace -> reference."""
    data = _drive(name, python, ["--describe", "--dist", name], (), env, timeout)
    return described(name, data)


def ask(
    plugin: PluginEnv,
    *,
    env: Mapping[str, str],
    timeout: float,
    refused: Collection[str] = (),
) -> Answer:
    """What ``plugin`` says this machine supports, checked: only its own namespaces, none of
    ``refused`` (answered by fitwheel itself or statically), every name and value by the
    grammar. Raises :class:`PluginError` naming the plugin on any failure."""
    wanted = {ns: ref for ns, ref in plugin.namespaces.items() if ns not in refused}
    if not wanted:
        return {}
    args = [arg for ns, ref in wanted.items() for arg in ("--plugin", f"{ns}={ref}")]
    data = _drive(plugin.label, plugin.python, args, wanted, env, timeout)
    return checked(plugin.label, data, wanted, refused)


def _drive(
    label: str,
    python: Path,
    args: list[str],
    namespaces: Collection[str],
    env: Mapping[str, str],
    timeout: float,
) -> Any:
    with tempfile.TemporaryDirectory(prefix="fitwheel-plugin-") as home:
        answer = os.path.join(home, ".fitwheel-answer.json")
        command = [str(python), "-I", str(DRIVER), "--answer", answer, *args]
        name = label.split("==")[0]
        try:
            done = proc.run(
                command,
                timeout=timeout,
                env=plugin_environment(env, namespaces, name, home),
                cwd=home,
                limit=OUTPUT_KEPT,
            )
        except OSError as exc:
            raise PluginError(
                label, f"its environment's interpreter {python} cannot run: {exc}"
            ) from None
        if done.timed_out:
            raise PluginError(
                label,
                f"it did not answer within {timeout:g} s and was stopped",
                "nothing was installed; raise the time bound (FITWHEEL_PLUGIN_TIMEOUT, or "
                "[plugins] timeout in fitwheel's configuration) or stop allowing it",
            )
        data = _read_answer(answer)
        if data is None:
            said = _said(done)
            raise PluginError(
                label, f"it exited with code {done.returncode} without an answer{said}"
            )
        if done.returncode != 0 and "error" not in data:
            raise PluginError(label, f"it exited with code {done.returncode}{_said(done)}")
        return data


def _read_answer(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(ANSWER_LIMIT + 1)
    except OSError:
        return None
    if len(raw) > ANSWER_LIMIT:
        return {"error": f"its answer is larger than {ANSWER_LIMIT} bytes"}
    try:
        return json.loads(raw)
    except ValueError:
        return {"error": "its answer is not JSON"}


def _said(done: proc.Finished) -> str:
    text = (done.text(stream="stderr").strip() or done.text().strip())[-800:]
    return f" (it said: {text})" if text else ""
