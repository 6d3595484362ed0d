"""``python -m rollout_workers.devcluster``: the devcluster command without the rollouts CLI."""

from rollout_workers.devcluster.cli import main

main()
