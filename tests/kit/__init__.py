"""The one test kit: wheels (``make_wheel``), sdists with real backends (``make_sdist``,
``backend_wheels``), a loopback server (``serve``, ``serve_static``; hostile on request, with
``gzip_bomb``) and hermetic environments (``make_venv``, ``clean_env``). Import from
``tests.kit``."""

from tests.kit.elf import elf_library
from tests.kit.env import UV, clean_env, installed_build, make_venv, offline_env, snapshot
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
    "backend_wheels",
    "build_simple_index",
    "clean_env",
    "elf_library",
    "free_port",
    "gzip_bomb",
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
