"""Docs that cannot drift: the CLI reference is generated, every command is documented."""

from __future__ import annotations

from pathlib import Path

import benchmod
import click

from mnemo._entry import OPERATIONS, main_group

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    return benchmod.load("gen_cli_docs", "scripts")


def test_cli_reference_is_current() -> None:
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == _generator().render(), (
        "docs/cli.md is stale: run python scripts/gen_cli_docs.py"
    )


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ctx = click.Context(main_group)
    for name in main_group.list_commands(ctx):
        cmd = main_group.get_command(ctx, name)
        assert cmd is not None and (cmd.help or "").strip(), f"mnemo {name} has no help text"
        if name not in ("demo",):
            assert f"mnemo {name}" in readme or f"`{name}`" in readme, f"README does not mention mnemo {name}"


def test_operations_table_names_real_commands() -> None:
    ctx = click.Context(main_group)
    assert set(OPERATIONS) <= set(main_group.list_commands(ctx))


def test_the_license_the_package_declares_is_in_the_repository() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["license"]
    text = (ROOT / "LICENSE").read_text("utf-8")
    assert declared == {"text": "Apache-2.0"} and "Apache License" in text and "Version 2.0, January 2004" in text
