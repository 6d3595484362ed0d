"""``python -m devcluster``: the devcluster command without the rollouts CLI."""

from devcluster.cli import main

main()
