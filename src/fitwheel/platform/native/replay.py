"""Recorded library answers: replay them instead of calling the library, or record real ones.

A recording is JSON::

    {"library": "nvml",
     "load_error": null,                      # a string: the library cannot be loaded
     "missing": ["nvmlSystemGetCudaDriverVersion_v2"],   # symbols the library lacks
     "calls": [{"function": "nvmlInit_v2", "args": [], "result": null},
               {"function": "nvmlDeviceGetCount_v2", "args": [], "result": 2},
               {"function": "nvmlDeviceGetCudaComputeCapability", "args": [1001], "error": 3},
               {"function": "nvmlShutdown", "args": [], "delay": 30}]}

A call is answered by the first record with the same function and arguments: ``result`` is
returned, ``error`` raised as that return code, after ``delay`` seconds if given (the delay ends
early when the transport is closed). A call with no record fails without a code.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from fitwheel.platform.native.transport import LibraryUnavailable, NativeError, Transport


class ReplayTransport:
    def __init__(self, recording: dict[str, Any]) -> None:
        if not isinstance(recording, dict):
            raise ValueError("a recording must be a JSON object")
        self.library = str(recording.get("library", ""))
        load_error = recording.get("load_error")
        if load_error:
            raise LibraryUnavailable(str(load_error))
        self.key = f"replay:{self.library}:{id(self)}"
        self._missing = {str(m) for m in recording.get("missing", [])}
        self._calls: list[dict[str, Any]] = [
            c for c in recording.get("calls", []) if isinstance(c, dict)
        ]
        self._closed = threading.Event()
        #: every call made, in order, as (function, args)
        self.log: list[tuple[str, list[Any]]] = []

    @classmethod
    def load(cls, path: str | Path) -> ReplayTransport:
        with open(path, encoding="utf-8") as fh:
            return cls(json.load(fh))

    def has(self, function: str) -> bool:
        return function not in self._missing

    def call(self, function: str, *args: Any) -> Any:
        self.log.append((function, list(args)))
        if function in self._missing:
            raise NativeError(function, None, "symbol missing")
        for record in self._calls:
            if record.get("function") == function and list(record.get("args", [])) == list(args):
                delay = record.get("delay")
                if isinstance(delay, (int, float)) and delay > 0:
                    self._closed.wait(float(delay))
                if record.get("error") is not None:
                    raise NativeError(function, int(record["error"]))
                return record.get("result")
        raise NativeError(function, None, "no recorded reply")

    def close(self) -> None:
        self._closed.set()


class RecordingTransport:
    """Wraps a real transport and keeps every answer, to be saved as a recording."""

    def __init__(self, inner: Transport, library: str) -> None:
        self.inner = inner
        self.key = inner.key
        self.recording: dict[str, Any] = {"library": library, "missing": [], "calls": []}

    def has(self, function: str) -> bool:
        present = self.inner.has(function)
        if not present and function not in self.recording["missing"]:
            self.recording["missing"].append(function)
        return present

    def call(self, function: str, *args: Any) -> Any:
        entry: dict[str, Any] = {"function": function, "args": list(args)}
        self.recording["calls"].append(entry)
        try:
            result = self.inner.call(function, *args)
        except NativeError as exc:
            entry["error"] = exc.code
            raise
        entry["result"] = result
        return result

    def close(self) -> None:
        self.inner.close()
