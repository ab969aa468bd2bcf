"""The torch-backend options every resolving command takes (``install``; ``lock`` and the like
add them the same way), and the settings they resolve to (flags over environment over files)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fitwheel.torchbackend.settings import TorchSettings


def add_torch_arguments(parser: argparse.ArgumentParser) -> None:
    torch = parser.add_argument_group("PyTorch's per-backend indexes (see docs/torch-backends.md)")
    torch.add_argument(
        "--torch-backend",
        metavar="BACKEND",
        help="take torch, torchvision, torchaudio, triton, xformers, torchao, ... from "
        "PyTorch's index for BACKEND: auto (the newest build that runs on every GPU here), "
        "cpu, cuXXX (cu126, cu128, cu130, ...), rocmX.Y or xpu; also FITWHEEL_TORCH_BACKEND "
        "or `fitwheel config set torch-backend auto`",
    )
    torch.add_argument(
        "--torch-index-url",
        metavar="BASE",
        help="the root under which BASE/<backend>/ is a simple index (default "
        "https://download.pytorch.org/whl; a mirror of it works)",
    )
    torch.add_argument(
        "--variant-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="a variant index consulted first for the projects it publishes variants for "
        "(repeatable; also the variant-index-url setting)",
    )


def torch_settings_of(args: argparse.Namespace) -> TorchSettings:
    from fitwheel.userconfig import torch_settings

    settings: TorchSettings = torch_settings(
        os.environ,
        backend=args.torch_backend,
        index_url=args.torch_index_url,
        variant_index_urls=args.variant_index_url,
    )
    return settings
