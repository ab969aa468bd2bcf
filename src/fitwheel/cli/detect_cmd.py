"""``fitwheel detect``: what this machine, a sysroot or a saved profile supports.

The ``--json`` path imports only detection itself (no rich, no resolver) so that scripts can call
it on every run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence

from fitwheel.errors import FitwheelError

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.platform.detect import Detection
    from fitwheel.platform.profile import Profile
    from fitwheel.reporter import Reporter

HELP = "Show what this machine (or a sysroot) supports."
ENV_SYSROOT = "FITWHEEL_SYSROOT"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the profile as JSON")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--sysroot",
        metavar="DIR",
        help="detect from the files under DIR (/sys, /proc, /dev, ...) instead of this machine; "
        f"no library is loaded and no process run (also: {ENV_SYSROOT})",
    )
    source.add_argument(
        "--profile", metavar="FILE", help="show a saved profile instead of detecting"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="detect afresh; neither read nor write the cache"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the profile (JSON) to FILE")
    from fitwheel.cli._targets import add_plugin_arguments, add_variant_property_argument

    add_plugin_arguments(parser)
    parser.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="VARIANTS_JSON",
        help="also say, device by device, which builds of this {name}-{version}-variants.json "
        "run here, and warn about a GPU none of them supports (repeatable)",
    )
    add_variant_property_argument(
        parser,
        help="add this property to what detection or the profile says (after the detected "
        "values of the same feature; repeatable; also the configuration file's "
        "[variant-properties] table, for this machine)",
    )
    parser.add_argument(
        "--gpu-policy",
        default="all",
        metavar="POLICY",
        help="multi-GPU policy: all (a GPU build must run on every GPU; default), any, or "
        "device=N (only device N; the written profile then holds that device alone)",
    )


def run(args: argparse.Namespace) -> int:
    policy = args.gpu_policy
    if policy not in ("all", "any"):
        from fitwheel.platform.policy import parse_policy

        policy = parse_policy(policy)

    sysroot = args.sysroot or os.environ.get(ENV_SYSROOT) or None
    plain = not (
        args.output
        or args.profile
        or sysroot
        or args.no_cache
        or args.variant_property
        or args.allow_plugin
    )
    if plain:
        from fitwheel.paths import site_config_path

        # a site configuration file may hold static answers ([variant-properties])
        plain = not os.path.exists(site_config_path(os.environ))
    if args.json and plain and policy in ("all", "any") and not args.check:
        from fitwheel.platform.cache import cached_profile_json

        # The common scripted call: this machine, cache warm, no overrides.
        cached = cached_profile_json()
        if cached is not None:
            sys.stdout.write(cached)
            return 0

    detection: Detection | None = None
    origin: str
    if args.profile:
        profile = _load_profile(args.profile)
        origin = f"profile {args.profile}"
    else:
        from fitwheel.platform.detect import detect
        from fitwheel.platform.probe import Probe

        if sysroot:
            # The one sysroot path of every command: files alone, no host environment.
            from fitwheel.cli._targets import sysroot_probe

            probe = sysroot_probe(sysroot)
            origin = f"sysroot {sysroot}"
        else:
            probe = Probe()
            origin = "this machine"
        detection = detect(probe, use_cache=not args.no_cache)
        profile = detection.profile()
    from fitwheel.cli._targets import with_static_answers

    profile = with_static_answers(args, profile)
    from fitwheel.cli._targets import plugins_wanted

    if origin == "this machine" and plugins_wanted(args):  # a plugin probes the machine it runs on
        from fitwheel.cli._plugins import machine_profile

        profile = machine_profile(args, profile)

    if policy.startswith("device="):
        from fitwheel.platform.policy import restrict_profile

        profile = restrict_profile(profile, policy)

    text = profile.dumps()
    if args.output:
        from pathlib import Path

        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise FitwheelError(
                f"cannot write the profile to {args.output}: {exc.strerror or exc}"
            ) from None
    if args.json:
        sys.stdout.write(text)
        return 0
    sys.stdout.write(render(profile, detection, origin, policy))
    for path in args.check:
        from fitwheel.cli._reporting import reporter_for

        sys.stdout.write(check_file(profile, path, policy, reporter_for(args)))
    if args.output and not args.quiet:
        sys.stdout.write(f"\nProfile written to {args.output}\n")
    return 0


def check_file(profile: Profile, path: str, policy: str, reporter: Reporter) -> str:
    """Which builds of the variants file at ``path`` run on each device, and on the machine under
    ``policy``; a GPU that none of them supports is warned about on stderr."""
    from fitwheel.platform.coverage import unserved_gpus
    from fitwheel.platform.policy import target_from_profile
    from fitwheel.variants.abi import with_abi_provider
    from fitwheel.variants.ordering import order_variants
    from fitwheel.variants.reading import loads_variant_info

    try:
        with open(path, "rb") as fh:
            info = with_abi_provider(loads_variant_info(fh.read(), path, kind="index"))
    except OSError as exc:
        raise FitwheelError(f"cannot read {path}: {exc.strerror or exc}") from None
    name = os.path.basename(path)
    gpu_namespaces = {ns for dev in profile.devices for ns in (dev.vendor, *dev.properties)}
    gpu_labels = [
        label for label, desc in info.variants.items() if desc.namespaces & gpu_namespaces
    ]
    lines = [f"\nBuilds of {name}"]
    rows = [["device", "runs", "does not run"]]
    for position, dev in enumerate(profile.devices):
        ordering = order_variants(info, target_from_profile(profile, f"device={position}"))
        runs = [label for label in ordering.labels if label in gpu_labels]
        rows.append(
            [
                dev.describe(),
                ", ".join(runs) or "-",
                ", ".join(label for label in gpu_labels if label not in runs) or "-",
            ]
        )
    machine = order_variants(info, target_from_profile(profile, policy))
    if profile.devices:
        lines += _table(rows)
    lines.append(f"  chosen for this machine (GPU policy {policy}): {_first(machine.labels)}")
    unserved = unserved_gpus(info, machine.labels, machine.rejected, profile.devices)
    if unserved is not None:
        reporter.warning(unserved.describe(name))
    return "\n".join(lines) + "\n"


def _first(labels: Sequence[str]) -> str:
    return labels[0] if labels else "no variant (an installer takes the non-variant wheel)"


def _load_profile(path: str) -> Profile:
    from fitwheel.platform.environment import host_environment
    from fitwheel.platform.profile import Profile, load_profile

    profile = load_profile(path)
    environment = {**host_environment(), **profile.environment}
    sources = dict(profile.sources)
    for ns in profile.properties:
        sources.setdefault(ns, f"profile {path}")
    return Profile(profile.properties, profile.devices, environment, sources)


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append((indent + "  ".join([*cells, row[-1]])).rstrip())
    return lines


def _values(values: Iterable[str]) -> str:
    items = list(values)
    if len(items) > 8:
        return f"{', '.join(items[:5])}, ..., {items[-1]}  ({len(items)} values)"
    return ", ".join(items) or "(not supported)"


def render(profile: Profile, detection: Detection | None, origin: str, policy: str) -> str:
    """The human-readable report: plain aligned text (the same on a terminal and in a pipe)."""
    out: list[str] = []
    head = f"Target: {origin}"
    if detection is not None:
        head += f"  (cache: {detection.cache}, {detection.elapsed_s * 1000:.1f} ms)"
    out.append(head)

    out.append("")
    out.append(f"Devices  (GPU policy: {policy})")
    if profile.devices:
        rows = [["#", "vendor", "index", "pci id", "name", "per-device properties"]]
        for i, dev in enumerate(profile.devices):
            props = "; ".join(
                f"{ns} :: {f} = {_values(v)}"
                for ns, feats in dev.properties.items()
                for f, v in feats.items()
            )
            rows.append([str(i), dev.vendor, str(dev.index), dev.pci_id, dev.name, props or "-"])
        out += _table(rows)
    else:
        out.append("  none")

    out.append("")
    out.append("Properties  (values most preferred first)")
    feature_sources: dict[tuple[str, str], str] = {}
    if detection is not None:
        for ns, result in detection.results.items():
            for feat, detected in result.properties.items():
                if profile.properties.get(ns, {}).get(feat) not in (None, detected):
                    continue  # values added to the detected ones: the namespace's sources say
                feature_sources[(ns, feat)] = result.sources.get(
                    feat, result.sources.get("*", "provider")
                )
    rows = [["namespace", "feature", "source", "values"]]
    for ns, feats in profile.properties.items():
        switches: dict[str, list[str]] = {}
        for feat, values in feats.items():
            source = feature_sources.get((ns, feat), profile.sources.get(ns, ""))
            if values == ("on",):
                # Dozens of on/off ISA extensions read better as one wrapped list per source.
                switches.setdefault(source, []).append(feat)
            else:
                rows.append([ns, feat, source, _values(values)])
        for source, names in switches.items():
            for i, chunk in enumerate(_wrap(names, 60)):
                first = i == 0
                rows.append(
                    [ns if first else "", "(on)" if first else "", source if first else "", chunk]
                )
    out += _table(rows) if len(rows) > 1 else ["  none"]

    if detection is not None:
        caps = detection.capabilities()
        if caps:
            out.append("")
            out.append("Capabilities")
            out += _table(
                [["namespace", "name", "value"]]
                + [[ns, k, _fmt(v)] for ns, c in caps.items() for k, v in c.items()]
            )
        notes = [
            [ns, r.status, r.reason]
            for ns, r in detection.results.items()
            if r.reason
            and (r.status != "absent" or r.sources or r.devices or "not detected" in r.reason)
        ]
        absent = [ns for ns, r in detection.results.items() if r.status == "absent"]
        if notes:
            out.append("")
            out.append("Notes")
            out += _table(notes)
        if absent:
            out.append("")
            out.append(f"Not present: {', '.join(absent)}")

    out.append("")
    out.append("Environment  (PEP 508 markers)")
    env = profile.environment
    out += _table([[k, v] for k, v in env.items()]) if env else ["  none"]
    return "\n".join(out) + "\n"


def _wrap(words: list[str], width: int) -> list[str]:
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)
