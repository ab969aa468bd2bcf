"""``fitwheel select VARIANTS_JSON``: order one version's variants for a target.

Output follows the CLI contract: ``--json`` prints ``{"ordered": [...], "rejected": {...}}``; the
human form lists the compatible labels best first, says what decided the first place, and gives
each rejected label with its reason. A file for which nothing is compatible is still a successful
query (exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from fitwheel.cli._targets import add_target_arguments, resolve_target
from fitwheel.errors import FitwheelError

# ``typing`` is not imported at run time: start-up speed is this command's point, and a name
# spelled TYPE_CHECKING is treated by type checkers as the real one.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.variants.model import VariantInfo
    from fitwheel.variants.ordering import Target

HELP = "Order the variants of a variants.json for a target."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "variants_json",
        metavar="VARIANTS_JSON",
        help="a {name}-{version}-variants.json file (any published schema version)",
    )
    add_target_arguments(parser)
    parser.add_argument(
        "--json", action="store_true", help='print {"ordered": [...], "rejected": {...}}'
    )


def _read(path: str) -> VariantInfo:
    from fitwheel.variants.reading import loads_variant_info

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise FitwheelError(
            f"cannot read {path}: {exc.strerror or exc}; give the path of a "
            "{name}-{version}-variants.json file"
        ) from None
    return loads_variant_info(data, path, kind="index")


def _notify_unanswered(
    args: argparse.Namespace, info: VariantInfo, target: Target, name: str
) -> None:
    """One notice per namespace whose variants need a plugin that did not run."""
    from fitwheel.variants.ordering import unanswered_plugins

    needs = unanswered_plugins(info, target)
    if not needs:
        return
    from fitwheel.cli._reporting import reporter_for
    from fitwheel.variants.plugin_need import notice_text

    reporter = reporter_for(args)
    for need in needs:
        reporter.warning(notice_text(need, [name], None, other_machine=target.other_machine))


def run(args: argparse.Namespace) -> int:
    from fitwheel.platform.coverage import unserved_gpus
    from fitwheel.variants.abi import with_abi_provider
    from fitwheel.variants.ordering import explain_choice, order_variants

    info = with_abi_provider(_read(args.variants_json))
    resolved = resolve_target(args)
    target, description = resolved.target, resolved.description
    ordering = order_variants(info, target)
    unserved = unserved_gpus(info, ordering.labels, ordering.rejected, resolved.profile.devices)
    name = os.path.basename(os.path.normpath(args.variants_json))
    _notify_unanswered(args, info, target, name)
    if unserved is not None:
        # Never a silent fall back: the choice below leaves a GPU unused.
        from fitwheel.cli._reporting import reporter_for

        reporter_for(args).warning(
            f"{unserved.describe(name)}. The choice falls back to "
            f"{ordering.labels[0] if ordering.ordered else 'a non-variant wheel'}."
        )
    out = sys.stdout
    if args.json:
        payload: dict[str, object] = {
            "ordered": ordering.labels,
            "rejected": dict(ordering.rejected),
        }
        if unserved is not None:
            payload["unsupported_devices"] = [d.describe() for d in unserved.devices]
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0

    lines = [f"{name} for {description}:"]
    if ordering.ordered:
        width = max(len(label) for label in ordering.labels)
        for i, label in enumerate(ordering.labels, start=1):
            mark = "  <- chosen" if i == 1 else ""
            lines.append(f"  {i:>2}. {label:<{width}}{mark}".rstrip())
        lines.append(f"  why: {explain_choice(info, target, ordering)}")
    else:
        lines.append("  no variant is compatible; an installer falls back to a non-variant wheel")
    if ordering.rejected:
        lines.append("rejected:")
        width = max(len(label) for label in ordering.rejected)
        for label, reason in ordering.rejected.items():
            lines.append(f"  {label:<{width}}  {reason}")
    out.write("\n".join(lines) + "\n")
    return 0
