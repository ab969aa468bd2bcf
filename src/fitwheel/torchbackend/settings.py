"""The torch-related settings in force (``--torch-backend`` and its kin), each with where it came
from. Kept apart from the routing and the table so that reading them costs nothing when no
backend is asked for."""

from __future__ import annotations

from typing import NamedTuple

#: PyTorch's download root; ``BASE/<backend>/`` is a simple index
DEFAULT_INDEX_URL = "https://download.pytorch.org/whl"


class TorchSettings(NamedTuple):
    """The torch-related settings in force, each with where it came from (a named tuple:
    every install reads them, and a dataclass costs milliseconds to import)."""

    backend: str | None = None
    backend_origin: str = "--torch-backend"
    index_url: str = ""
    index_url_origin: str = "the default"
    variant_index_urls: tuple[str, ...] = ()
    variant_index_origin: str = "--variant-index-url"
    extra_projects: tuple[str, ...] = ()
