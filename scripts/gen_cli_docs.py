"""Write docs/cli.md from the CLI's own help text (tests/test_docs.py checks it is current).

    python scripts/gen_cli_docs.py
"""

from __future__ import annotations

from pathlib import Path

import click

from mnemo._entry import main_group

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def render() -> str:
    """The CLI reference as Markdown: every command's --help, in order."""
    parts = [
        "# mnemo CLI reference\n",
        "Generated from the code by `python scripts/gen_cli_docs.py`; do not edit by hand.\n",
    ]
    ctx = click.Context(main_group, info_name="mnemo", max_content_width=100, terminal_width=100, help_option_names=["-h", "--help"])
    parts.append("```\n" + main_group.get_help(ctx) + "\n```\n")
    for name in main_group.list_commands(ctx):
        cmd = main_group.get_command(ctx, name)
        assert cmd is not None
        sub = click.Context(cmd, info_name=f"mnemo {name}", max_content_width=100, terminal_width=100, help_option_names=["-h", "--help"])
        parts.append(f"## mnemo {name}\n\n```\n{cmd.get_help(sub)}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC}")
