"""Which backend a torch-ecosystem file is built for, from its name alone, and whether a file
may be taken once a backend is chosen."""

from __future__ import annotations

import pytest

from fitwheel.torchbackend.builds import build_of, local_backend

LINUX = "cp311-cp311-manylinux_2_28_x86_64"


@pytest.mark.parametrize(
    ("local", "backend"),
    [
        ("cu130", "cu130"),
        ("cpu", "cpu"),
        ("cpu.cxx11.abi", "cpu"),
        ("rocm6.4", "rocm6.4"),
        ("rocm6.4.1", "rocm6.4.1"),
        ("xpu", "xpu"),
        ("cu1", None),
        ("git1a2b3c", None),
        ("cpuish", None),
        (None, None),
    ],
)
def test_the_backend_a_local_version_names(local: str | None, backend: str | None) -> None:
    assert local_backend(local) == backend


@pytest.mark.parametrize(
    ("filename", "kind", "backend"),
    [
        (f"torch-2.13.0+cpu-{LINUX}.whl", "local", "cpu"),
        (f"torch-2.10.0+cu130-{LINUX}.whl", "local", "cu130"),
        (f"torch-2.9.0+rocm6.4-{LINUX}.whl", "local", "rocm6.4"),
        (f"torch-2.9.0-{LINUX}-cuda12.8.whl", "variant", "cu128"),
        (f"torch-2.9.0-{LINUX}-null.whl", "variant", "cpu"),
        # the default index's Linux build: a CUDA build whose name does not say which
        (f"torch-2.9.0-{LINUX}.whl", "default", None),
        (f"torch-2.9.0a0+git1a2b3c-{LINUX}.whl", "default", None),
        ("torch-2.9.0-cp311-none-macosx_11_0_arm64.whl", "default", "cpu"),
        ("torch-2.9.0-cp311-cp311-win_amd64.whl", "default", "cpu"),
        ("torch-2.9.0+git1a2b-cp311-cp311-win_amd64.whl", "default", None),
        ("torchtune-0.6.1-py3-none-any.whl", "pure", None),
        ("torch-2.9.0.tar.gz", "source", None),
    ],
)
def test_the_build_a_file_name_says(filename: str, kind: str, backend: str | None) -> None:
    build = build_of(filename)
    assert build is not None
    assert (build.kind, build.backend) == (kind, backend)


def test_what_may_be_taken_once_a_backend_is_chosen() -> None:
    def fits(filename: str, backend: str) -> bool:
        build = build_of(filename)
        assert build is not None
        return build.fits(backend)

    assert fits(f"torch-2.10.0+cu130-{LINUX}.whl", "cu130")
    assert not fits(f"torch-2.13.0+cpu-{LINUX}.whl", "cu130")
    assert not fits(f"torch-2.13.0+cu126-{LINUX}.whl", "cpu")
    assert not fits(f"torch-2.9.0-{LINUX}.whl", "cpu")
    assert not fits(f"torch-2.9.0-{LINUX}.whl", "cu130")
    assert not fits("torch-2.9.0.tar.gz", "cpu")
    assert fits("torchtune-0.6.1-py3-none-any.whl", "rocm6.4")
    assert fits("torch-2.9.0-cp311-none-macosx_11_0_arm64.whl", "cpu")
    assert build_of("torch-2.9.0-variants.json") is None
