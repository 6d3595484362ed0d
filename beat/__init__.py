"""The beat process: the redbeat schedule of the system tasks (timer tick, periodic resync)."""
