"""The local stack: the embedded Redis server, pid files, `rollouts up` (every process of the
system on one machine) and the demo that drives it."""
