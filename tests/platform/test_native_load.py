"""Native libraries load from fixed names only, and a missing one says which paths were tried."""

from __future__ import annotations

import pytest

from fitwheel.platform.native.level_zero import CtypesLevelZero
from fitwheel.platform.native.nvml import CtypesNvml
from fitwheel.platform.native.transport import LibraryUnavailable, load_first


def test_the_first_path_that_loads_wins() -> None:
    lib, path = load_first(["/nonexistent/libnvidia-ml.so.1", "libc.so.6"])
    assert path == "libc.so.6"
    assert hasattr(lib, "getpid")


def test_a_library_that_is_nowhere_names_every_path_tried() -> None:
    with pytest.raises(LibraryUnavailable) as missing:
        load_first(["/nonexistent/a.so", "/nonexistent/b.so"])
    assert "/nonexistent/a.so" in str(missing.value) and "/nonexistent/b.so" in str(missing.value)
    with pytest.raises(LibraryUnavailable, match="no library path"):
        load_first([])


@pytest.mark.parametrize("binding", [CtypesNvml, CtypesLevelZero])
def test_bindings_report_an_absent_library(binding: type) -> None:
    with pytest.raises(LibraryUnavailable, match=r"/nonexistent/lib\.so"):
        binding(["/nonexistent/lib.so"])
