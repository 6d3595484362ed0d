"""What a Redis round trip costs, against what the commands in it cost: CPU of the server and of
the client, on this machine, over TCP to 127.0.0.1 as the pool talks to its embedded Redis.

Two measurements, each over `--n` repetitions, with a private embedded Redis (AOF on, as the
default; `--no-aof` too):

* `claim + done`: the real workqueue's claim and done of distinct keys (two script calls a
  reconcile), with one 4 KB HSET between them (a cache write's worth of bytes): the server's
  CPU a cycle (from /proc), against the time Redis itself counts inside the commands (INFO
  commandstats). The difference is what the server pays for each round trip outside the
  commands: reading the request, writing the reply, the event loop, and the AOF's write.
* `event script, 1 vs 4 a round trip`: a script shaped like the watcher's cache write (two
  HSETs of a 4 KB object and its version, a GET), called once a round trip and then four to a
  pipeline: server and client CPU an event.

    .venv/bin/python bench/redis_roundtrip.py [--n 20000] [--no-record]

It prints a table and writes bench/results/redis_roundtrip.json (or prints only, with
--no-record).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from rollout_workers.keys import ObjectKey
from rollout_workers.local.redis_server import EmbeddedRedis
from rollout_workers.settings import QueueSettings
from rollout_workers.workqueue import Outcome, WorkQueue

BLOB = "x" * 4000
EVENT_SCRIPT = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return redis.call('GET', KEYS[3])
"""


def process_cpu(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def command_usec(client: redis.Redis) -> float:
    """Microseconds Redis counted inside the top-level commands (scripts include theirs)."""
    stats = client.info("commandstats")
    top = ("cmdstat_evalsha", "cmdstat_hset")
    return float(sum(int(v["usec"]) for k, v in stats.items() if k in top))


def claim_done(n: int, aof: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis", appendonly=aof).start()
        try:
            assert server.process is not None
            client = redis.Redis.from_url(server.url)
            queue = WorkQueue(
                client, kind="rollouts", prefix="bench", settings=QueueSettings(),
                send=lambda keys: None,
            )  # fmt: skip
            keys = [ObjectKey(f"ns{i % 20}/app-{i}") for i in range(n)]
            for i in range(0, n, 500):
                queue.add(keys[i : i + 500])
            client.config_resetstat()
            cpu0 = process_cpu(server.process.pid)
            for key in keys:
                queue.claim(key, "token")
                client.hset("bench:objects", key, BLOB)
                queue.done(key, "token", Outcome.AFTER, delay=600)
            cpu = process_cpu(server.process.pid) - cpu0
            inside = command_usec(client)
        finally:
            server.stop()
    return {
        "server_cpu_us_per_cycle": round(1e6 * cpu / n, 1),
        "inside_commands_us_per_cycle": round(inside / n, 1),
        "round_trips_per_cycle": 3,
    }


def event_script(n: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis").start()
        try:
            assert server.process is not None
            client = redis.Redis.from_url(server.url)
            script = client.register_script(EVENT_SCRIPT)
            keys = ["bench:objects", "bench:versions", "bench:type_rv"]
            for batch in (1, 4):
                cpu0, own0 = process_cpu(server.process.pid), own_cpu()
                for i in range(0, n, batch):
                    if batch == 1:
                        script(keys=keys, args=[f"k{i}", BLOB, i])
                        continue
                    pipe = client.pipeline(transaction=False)
                    for j in range(batch):
                        script(keys=keys, args=[f"k{i + j}", BLOB, i], client=pipe)
                    pipe.execute()
                out[f"{batch} a round trip"] = {
                    "server_cpu_us_per_event": round(
                        1e6 * (process_cpu(server.process.pid) - cpu0) / n, 1
                    ),
                    "client_cpu_us_per_event": round(1e6 * (own_cpu() - own0) / n, 1),
                }
        finally:
            server.stop()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args()
    started = time.perf_counter()
    result: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "n": args.n,
        "claim_done": {"aof": claim_done(args.n, True), "no_aof": claim_done(args.n, False)},
        "event_script": event_script(args.n),
    }
    print("claim + done (3 round trips a cycle), us a cycle:")
    for name, row in result["claim_done"].items():
        outside = row["server_cpu_us_per_cycle"] - row["inside_commands_us_per_cycle"]
        print(
            f"  {name:7s} server CPU {row['server_cpu_us_per_cycle']:6.1f}, inside the commands "
            f"{row['inside_commands_us_per_cycle']:5.1f}, outside them {outside:6.1f} "
            f"({outside / 3:.1f} a round trip)"
        )
    print("event script, us an event:")
    for name, row in result["event_script"].items():
        print(
            f"  {name:15s} server CPU {row['server_cpu_us_per_event']:5.1f}, "
            f"client CPU {row['client_cpu_us_per_event']:5.1f}"
        )
    print(f"total {time.perf_counter() - started:.0f} s")
    if not args.no_record:
        path = Path(__file__).parent / "results" / "redis_roundtrip.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"written to {path}")


if __name__ == "__main__":
    main()
