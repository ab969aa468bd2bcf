"""Facts about the machine that every GPU provider needs: WSL2, containers, forced values."""

from __future__ import annotations

import re

from fitwheel.platform.probe import Probe

# compiled on first use (``re`` caches it), not on every start
_CONTAINER_CGROUP = r"docker|kubepods|containerd|libpod|lxc|/ecs/"


def is_wsl(probe: Probe) -> bool:
    """WSL2 (and WSL1): the kernel release names Microsoft."""
    for path in ("/proc/sys/kernel/osrelease", "/proc/version"):
        text = probe.read_text(path, 4096)
        if text is not None:
            return "microsoft" in text.lower()
    return False


def in_container(probe: Probe) -> bool:
    """Inside a Docker/Podman/Kubernetes/LXC container, as far as files tell."""
    if probe.exists("/.dockerenv") or probe.exists("/run/.containerenv"):
        return True
    if probe.env.get("container"):
        return True
    cgroup = probe.read_text("/proc/1/cgroup", 65536) or ""
    return bool(re.search(_CONTAINER_CGROUP, cgroup))


def forced(probe: Probe, *names: str) -> tuple[str, str] | None:
    """The first of the environment variables ``names`` that is set and not blank, with its
    (stripped) value. An empty variable counts as unset, as the published providers treat it."""
    for name in names:
        value = probe.env.get(name, "").strip()
        if value:
            return name, value
    return None


def parse_version(text: str, parts: int = 2) -> tuple[int, ...] | None:
    """``"12.8"`` -> (12, 8); ``"6.4.1-120"`` -> (6, 4) for parts=2; missing parts are 0."""
    match = re.match(r"\s*(\d{1,4})(?:\.(\d{1,4}))?(?:\.(\d{1,6}))?", text)
    if not match:
        return None
    nums = [int(g) if g is not None else 0 for g in match.groups()]
    return tuple(nums[:parts])


def split_list(text: str) -> list[str]:
    """A list in an environment variable: comma, semicolon or whitespace separated."""
    return [tok for tok in re.split(r"[,;\s]+", text.strip()) if tok]
