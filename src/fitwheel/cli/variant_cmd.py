"""``fitwheel variant make|show|strip``: variant wheels from plain wheels, and back."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "Make, show or strip variant wheels."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    make = sub.add_parser(
        "make",
        help="write a variant wheel: the wheel plus *.dist-info/variant.json and a label",
        description="Write a copy of WHEEL with *.dist-info/variant.json, RECORD updated and the "
        "variant label in its filename. Every other member is copied byte for byte.",
    )
    make.add_argument("wheel", metavar="WHEEL", type=Path)
    make.add_argument(
        "-p",
        "--property",
        dest="properties",
        action="append",
        default=[],
        metavar="'NS :: FEATURE :: VALUE'",
        help="a variant property (repeat for several)",
    )
    make.add_argument("--label", help="the variant label (default: 8 hex digits of a hash)")
    make.add_argument("--null", action="store_true", help="make the null variant")
    source = make.add_mutually_exclusive_group()
    source.add_argument(
        "--variants-config",
        type=Path,
        metavar="FILE",
        help="TOML file with a [variant] table: providers and default-priorities",
    )
    source.add_argument(
        "--pyproject",
        type=Path,
        metavar="FILE",
        help="take the [variant] table from this pyproject.toml (default: ./pyproject.toml)",
    )
    make.add_argument("-o", "--output-dir", type=Path, metavar="DIR", help="default: beside WHEEL")
    make.add_argument(
        "--no-verify",
        action="store_true",
        help="skip checking each member against its RECORD hash (sizes are still checked)",
    )
    make.add_argument("--json", action="store_true", help="print the result as JSON")

    show = sub.add_parser("show", help="print a wheel's variant label, properties and providers")
    show.add_argument("wheel", metavar="WHEEL", type=Path)
    show.add_argument("--json", action="store_true", help="print JSON")

    strip = sub.add_parser("strip", help="write the plain wheel back: no variant.json, no label")
    strip.add_argument("wheel", metavar="WHEEL", type=Path)
    strip.add_argument("-o", "--output-dir", type=Path, metavar="DIR", help="default: beside WHEEL")
    strip.add_argument("--no-verify", action="store_true", help="skip the RECORD hash check")


def _config(args: argparse.Namespace) -> object:
    from fitwheel.publish.config import VariantConfigError, load_config

    if args.variants_config is not None:
        return load_config(args.variants_config)
    pyproject = args.pyproject if args.pyproject is not None else Path("pyproject.toml")
    if args.pyproject is None and not pyproject.is_file():
        raise VariantConfigError(
            "no provider declarations: pass --variants-config FILE or --pyproject FILE "
            "(a TOML [variant] table with default-priorities and providers)"
        )
    return load_config(pyproject, pyproject=True)


def run(args: argparse.Namespace) -> int:
    if args.action == "make":
        return _make(args)
    if args.action == "show":
        return _show(args)
    return _strip(args)


def _make(args: argparse.Namespace) -> int:
    from fitwheel.publish.output import EarlyOutput

    # Copying the wheel dominates; start it (into a temporary file that is named only once
    # every check has passed) before the rest is imported, read and checked.
    early = EarlyOutput(args.wheel, args.output_dir or args.wheel.parent)
    try:
        from fitwheel.publish.config import VariantConfig
        from fitwheel.publish.make import make_variant
        from fitwheel.variants.model import VariantProperty

        props = [VariantProperty.parse(text) for text in args.properties]
        config = _config(args)
        assert isinstance(config, VariantConfig)
        result = make_variant(
            args.wheel,
            props,
            config,
            label=args.label,
            null=args.null,
            out_dir=args.output_dir,
            verify=not args.no_verify,
            early=early,
        )
    finally:
        early.discard()
    if args.json:
        print(json.dumps({"wheel": str(result.path), "variant_label": result.label}))
    else:
        print(f"wrote {result.path} (label {result.label})")
    return 0


def _show(args: argparse.Namespace) -> int:
    from fitwheel.publish.show import read_wheel_variant, show_json, show_text

    wv = read_wheel_variant(args.wheel)
    if args.json:
        json.dump(show_json(wv), sys.stdout, indent=2)
        print()
    else:
        print(show_text(wv))
    return 0


def _strip(args: argparse.Namespace) -> int:
    from fitwheel.publish.make import strip_variant

    target = strip_variant(args.wheel, out_dir=args.output_dir, verify=not args.no_verify)
    print(f"wrote {target}")
    return 0
