"""The one test kit: wheels (``make_wheel``), sdists with real backends (``make_sdist``,
``backend_wheels``), a loopback server (``serve``, ``serve_static``; hostile on request, with
``gzip_bomb``), hermetic environments (``make_venv``, ``clean_env``), a stand-in of PyTorch's
download root (``build_torch_mirror``: per-backend, default and variant indexes) and
``impersonate``: an HTTPS proxy that answers for a hard-coded host from a folder. Import from
``tests.kit``."""

from tests.kit.elf import elf_library
from tests.kit.env import UV, clean_env, installed_build, make_venv, offline_env, snapshot
from tests.kit.impersonate import impersonate
from tests.kit.sdists import (
    BackendsUnavailable,
    backend_wheels,
    make_sdist,
    make_source_tree,
)
from tests.kit.server import (
    ServerState,
    free_port,
    gzip_bomb,
    nginx_binary,
    self_signed_cert,
    serve,
    serve_nginx,
    serve_static,
)
from tests.kit.torch_mirror import TorchMirror, build_torch_mirror
from tests.kit.wheels import (
    FIXTURES,
    H100,
    KEPLER,
    SCHEMA,
    UV_NVIDIA,
    build_simple_index,
    make_wheel,
    members,
    record_hash,
    rewrite_wheel,
    sha256_of,
    torch_like,
    variant_doc,
    variant_info_json,
)

__all__ = [
    "FIXTURES",
    "H100",
    "KEPLER",
    "SCHEMA",
    "UV",
    "UV_NVIDIA",
    "BackendsUnavailable",
    "ServerState",
    "TorchMirror",
    "backend_wheels",
    "build_simple_index",
    "build_torch_mirror",
    "clean_env",
    "elf_library",
    "free_port",
    "gzip_bomb",
    "impersonate",
    "installed_build",
    "make_sdist",
    "make_source_tree",
    "make_venv",
    "make_wheel",
    "members",
    "nginx_binary",
    "offline_env",
    "record_hash",
    "rewrite_wheel",
    "self_signed_cert",
    "serve",
    "serve_nginx",
    "serve_static",
    "sha256_of",
    "snapshot",
    "torch_like",
    "variant_doc",
    "variant_info_json",
]
