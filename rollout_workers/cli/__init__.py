"""The `rollouts` command-line interface."""
