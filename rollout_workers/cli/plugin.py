"""The Argo Rollouts kubectl plugin's commands as `rollouts` subcommands, and where each lives.

A user may run `kubectl argo rollouts promote` one day and `rollouts promote` the next against
the same controller, so each command writes exactly what the plugin writes, with the same patch
type and to the same (sub)resource; where the plugin falls back from the status subresource to
the main resource on 404 (clusters whose CRD has no status subresource), so does the command.
The patch bodies are computed by pure functions; the commands only read, send, and print one
line. One module per group of commands:

- lifecycle.py: promote, abort, retry, pause, terminate;
- edit.py: set image, undo, restart;
- status.py: status (reads only);
- get.py: get rollout|experiment, once or --watch (its data info.py's, its screen tree.py's);
- listing.py: list rollouts|experiments;

and what they share: cluster.py (the connection, the options, API errors, a watch of one
object), phase.py (a rollout's phase and step), fields.py (readers over API objects), table.py
(the plugin's table columns), common.py (one-line failures, durations, short names).
"""

from __future__ import annotations

import click

from rollout_workers.cli.edit import restart, set_group, undo
from rollout_workers.cli.get import get_group
from rollout_workers.cli.lifecycle import abort, pause, promote, retry, terminate_group
from rollout_workers.cli.listing import list_group
from rollout_workers.cli.status import status

COMMANDS: tuple[click.Command, ...] = (promote, abort, retry, restart, pause, undo, status)
GROUPS: tuple[click.Group, ...] = (set_group, get_group, list_group, terminate_group)


def register(cli: click.Group) -> None:
    """Add the plugin's actions to the `rollouts` group; subcommands of `set`, `get` and
    `list` join an existing group of that name."""
    for command in COMMANDS:
        cli.add_command(command)
    for group in GROUPS:
        existing = cli.commands.get(group.name or "")
        if isinstance(existing, click.Group) and existing is not group:
            for sub_name, sub in group.commands.items():
                existing.add_command(sub, sub_name)
        else:
            cli.add_command(group)
