"""The backend the user's requirements name (a ``+cu118`` pin, a per-backend index line), and
how it meets ``--torch-backend``: every rule, table-driven, on requirements files read as
``install`` reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.options import SourceOptions
from fitwheel.resolve.requirements import UserInput, collect
from fitwheel.torchbackend.pins import (
    BackendConflict,
    Named,
    index_lines,
    named_backend,
    requested_backend,
    url_backend,
)
from fitwheel.torchbackend.routing import routed_projects
from fitwheel.torchbackend.settings import DEFAULT_INDEX_URL, TorchSettings
from fitwheel.torchbackend.table import load_backend_table

BASE = "https://mirror.example/pytorch/whl"
PROJECTS = routed_projects(load_backend_table(), TorchSettings(extra_projects=("mytorchext",)))
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.12"}
MAC = {"sys_platform": "darwin", "platform_system": "Darwin", "python_version": "3.12"}


def read(tmp_path: Path, text: str, *cli: str) -> tuple[UserInput, SourceOptions]:
    """The requirements file ``text`` (and ``cli`` requirements) as install reads them, and
    the sources with the file's options on top."""
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    user = collect(cli, [str(path)], env={})
    return user, SourceOptions().with_file_options(user.options)


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        # BASE/<backend> of the torch index root in force, with or without the slash
        (f"{BASE}/cu130", "cu130"),
        (f"{BASE}/cu130/", "cu130"),
        (f"{BASE}/rocm6.4/", "rocm6.4"),
        (f"{BASE}/xpu", "xpu"),
        # ... the host compared without case and credentials
        ("https://user:secret@MIRROR.example/pytorch/whl/cpu/", "cpu"),
        # any host's /whl/<backend>: PyTorch's layout on a mirror
        ("https://download.pytorch.org/whl/cu128", "cu128"),
        ("http://127.0.0.1:8000/whl/cu126/", "cu126"),
        ("https://other.example/a/b/whl/rocm7.0/", "rocm7.0"),
        # not a backend index
        ("https://other.example/simple/", None),
        ("https://other.example/whl/", None),
        ("https://other.example/whl/nightly/cu130/", None),  # a channel, not BASE/<backend>
        ("https://other.example/whl/cpu.cxx11.abi/", None),  # not a backend's name alone
        ("https://other.example/cu130/", None),  # not under /whl, not under BASE
        ("https://other.example/whl/cuda/", None),
        (f"{BASE}/variant/", None),
        (f"{BASE}/cu130/torch/", None),  # a project page
    ],
)
def test_which_urls_are_backend_indexes(url: str, backend: str | None) -> None:
    assert url_backend(url, BASE) == backend


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch==2.4.0+cu118\n", ("cu118", "torch==2.4.0+cu118", ":1")),
        ("numpy\ntorch==2.9.0+cpu\n", ("cpu", "torch==2.9.0+cpu", ":2")),
        ("torchvision===0.24.0+rocm6.4\n", ("rocm6.4", "torchvision===0.24.0+rocm6.4", ":1")),
        ("torch==2.9.0+cpu.cxx11.abi\n", ("cpu", "torch==2.9.0+cpu.cxx11.abi", ":1")),
        ("mytorchext==1.0+cu130\n", ("cu130", "mytorchext==1.0+cu130", ":1")),  # torch-projects
        # the first place that names it, when all name the same one
        ("torch==2.9.0+cu130\ntorchvision==0.24.0+cu130\n", ("cu130", "torch==2.9.0+cu130", ":1")),
        # an index line, in the file
        (
            "--extra-index-url http://127.0.0.1:9/whl/cu126\ntorch\n",
            ("cu126", "--extra-index-url http://127.0.0.1:9/whl/cu126", ":1"),
        ),
        (f"-i {BASE}/cpu/\ntorch\n", ("cpu", f"--index-url {BASE}/cpu/", ":1")),
        # an index line and a pin that agree: the first written
        (
            "torch==2.9.0+cu126\n--extra-index-url http://127.0.0.1:9/whl/cu126\n",
            ("cu126", "torch==2.9.0+cu126", ":1"),
        ),
        # names nothing
        ("torch==2.9.0\n", None),
        ("torch>=2.4\n", None),
        ("torch!=2.4.0+cu118\n", None),  # excludes a build, names none
        ("numpy==1.0+cu118\n", None),  # not a routed project
        ("torch==2.9.0+abc\n", None),  # a local version that names no backend
        ("--extra-index-url https://other.example/simple\ntorch\n", None),
        # the marker holds on Linux only (the target here is Linux)
        ('torch==2.9.0+cpu; sys_platform == "darwin"\n'
         'torch==2.9.0+cu128; sys_platform == "linux"\n',
         ("cu128", 'torch==2.9.0+cu128; sys_platform == "linux"', ":2")),
    ],
)  # fmt: skip
def test_what_the_requirements_name(
    tmp_path: Path, text: str, expected: tuple[str, str, str] | None
) -> None:
    user, sources = read(tmp_path, text)
    named = named_backend(
        user, index_lines(sources), projects=PROJECTS, torch_index_url=BASE, markers=LINUX
    )
    if expected is None:
        assert named is None
        return
    backend, what, line = expected
    assert named == Named(backend, what, f"{tmp_path / 'requirements.txt'}{line}")
    assert named.describe() == f"{tmp_path / 'requirements.txt'}{line} ({what})"


def test_a_constraint_and_the_command_line_name_it_too(tmp_path: Path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("torch==2.4.0+cu118\n")
    user = collect([], [], [str(constraints)], env={})
    named = named_backend(user, projects=PROJECTS, torch_index_url=BASE)
    assert named == Named("cu118", "torch==2.4.0+cu118", f"{constraints}:1")
    user = collect(["torch==2.9.0+xpu"], env={})
    named = named_backend(user, projects=PROJECTS, torch_index_url=BASE)
    assert named is not None and named.describe() == "the command line (torch==2.9.0+xpu)"
    # an index flag (no file wrote it) is the command line's; a password never shows
    flags = SourceOptions(
        index_url="https://u:pw@h.example/simple",
        extra_index_urls=["https://u:pw@h.example/whl/rocm6.4"],
    )
    named = named_backend(UserInput(), index_lines(flags), projects=PROJECTS, torch_index_url=BASE)
    assert named == Named(
        "rocm6.4", "--extra-index-url https://h.example/whl/rocm6.4", "the command line"
    )
    # --no-index: no index is searched, so none names a backend
    none = SourceOptions(index_url=f"{BASE}/cpu", no_index=True)
    assert (
        named_backend(UserInput(), index_lines(none), projects=PROJECTS, torch_index_url=BASE)
        is None
    )


def test_a_wheel_named_directly_names_nothing(tmp_path: Path) -> None:
    from tests.kit import make_wheel

    own = make_wheel(tmp_path / "mine", "torch", "2.13.0+cpu")
    user = collect([str(own), f"torch @ {own.resolve().as_uri()}"], env={})
    assert [item.wheel_path for item in user.requirements] == [own.resolve()] * 2
    assert named_backend(user, projects=PROJECTS, torch_index_url=BASE) is None


def test_a_file_index_url_replaces_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("-i https://other.example/simple\ntorch\n")
    user = collect([], [str(path)], env={})
    flags = SourceOptions(index_url=f"{BASE}/cu130", extra_index_urls=[f"{BASE}/cu128"])
    lines = index_lines(flags.with_file_options(user.options))
    assert [(line.url, line.where) for line in lines] == [
        ("https://other.example/simple", f"{path}:1")
    ]
    assert named_backend(user, lines, projects=PROJECTS, torch_index_url=BASE) is None


@pytest.mark.parametrize(
    ("text", "first", "second"),
    [
        ("torch==2.4.0+cu118\ntorchvision==0.19.0+cu121\n", "torch==2.4.0+cu118 at", "cu121"),
        ("--extra-index-url http://127.0.0.1:9/whl/cu126\ntorch==2.9.0+cpu\n",
         "torch==2.9.0+cpu at", "--extra-index-url http://127.0.0.1:9/whl/cu126 at"),
        ("-i http://127.0.0.1:9/whl/cpu\n--extra-index-url http://127.0.0.1:9/whl/xpu\ntorch\n",
         "--index-url http://127.0.0.1:9/whl/cpu at", "names xpu"),
    ],
)  # fmt: skip
def test_two_backends_named_are_an_error_naming_both(
    tmp_path: Path, text: str, first: str, second: str
) -> None:
    user, sources = read(tmp_path, text)
    with pytest.raises(BackendConflict) as caught:
        named_backend(user, index_lines(sources), projects=PROJECTS, torch_index_url=BASE)
    message = str(caught.value)
    assert message.startswith("the requirements name two torch backends: ")
    assert first in message and second in message
    assert f"{tmp_path / 'requirements.txt'}:1" in message
    assert f"{tmp_path / 'requirements.txt'}:2" in message


def test_markers_decide_per_target(tmp_path: Path) -> None:
    user, _ = read(
        tmp_path,
        'torch==2.9.0+cpu; sys_platform == "darwin"\ntorch==2.9.0+cu128; sys_platform == "linux"\n',
    )
    mac = named_backend(user, projects=PROJECTS, torch_index_url=BASE, markers=MAC)
    assert mac is not None and mac.backend == "cpu"
    # no target to judge the markers by: both count, and they disagree
    with pytest.raises(BackendConflict):
        named_backend(user, projects=PROJECTS, torch_index_url=BASE)


AUTO = TorchSettings(backend="auto", index_url=BASE)


@pytest.mark.parametrize(
    ("settings", "text", "expected"),
    [
        # no torch-backend setting: nothing here applies, whatever the file names
        (TorchSettings(index_url=BASE), "torch==2.4.0+cu118\n", None),
        (TorchSettings(index_url=BASE), "torch==2.4.0+cu118\ntorchvision==0.1+cpu\n", None),
        # auto follows the requirements
        (AUTO, "torch==2.4.0+cu118\n", "cu118"),
        (AUTO, f"--extra-index-url {BASE}/rocm6.4\ntorch\n", "rocm6.4"),
        (AUTO, "torch\n", None),
        # a backend named by hand that agrees, or that the file does not contradict
        (TorchSettings(backend="cu118", index_url=BASE), "torch==2.4.0+cu118\n", None),
        (TorchSettings(backend="cu118", index_url=BASE), "torch\n", None),
    ],
)
def test_what_auto_follows(
    tmp_path: Path, settings: TorchSettings, text: str, expected: str | None
) -> None:
    user, sources = read(tmp_path, text)
    named = requested_backend(settings, user, index_lines(sources), projects=PROJECTS)
    assert (named.backend if named is not None else None) == expected


@pytest.mark.parametrize(
    ("origin", "shown"),
    [
        ("--torch-backend", "--torch-backend cu130 conflicts with torch==2.4.0+cu118 at "),
        ("FITWHEEL_TORCH_BACKEND", "torch-backend cu130 (from FITWHEEL_TORCH_BACKEND) conflicts"),
    ],
)
def test_a_backend_named_by_hand_that_the_requirements_contradict(
    tmp_path: Path, origin: str, shown: str
) -> None:
    user, sources = read(tmp_path, "numpy\ntorch==2.4.0+cu118\n")
    settings = TorchSettings(backend="cu130", backend_origin=origin, index_url=BASE)
    with pytest.raises(BackendConflict) as caught:
        requested_backend(settings, user, index_lines(sources), projects=PROJECTS)
    message = str(caught.value)
    assert shown in message
    assert f"at {tmp_path / 'requirements.txt'}:2, which names the cu118 build" in message
    assert "--torch-backend cu118" in message


def test_the_default_root_counts_as_base() -> None:
    assert url_backend(f"{DEFAULT_INDEX_URL}/cu130/", DEFAULT_INDEX_URL) == "cu130"
    assert url_backend(f"{BASE}/cu130/", DEFAULT_INDEX_URL) == "cu130"  # .../whl/cu130
    assert url_backend("https://h.example/torch/cu130/", "https://h.example/torch") == "cu130"
    assert url_backend("https://h.example/torch/cu130/", DEFAULT_INDEX_URL) is None
