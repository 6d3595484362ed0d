"""Reconcile handlers for tests, loaded by real worker processes through settings.

The recording handler appends one JSON line per reconcile to `<prefix>:test:trace`:
{key, pid, thread, start, end, seq}, where `seq` is the key's add counter
(`<prefix>:test:seq:<key>`) read after the claim. A test that increments the counter before
each add can then check that some reconcile saw the final value, i.e. ran after the last add.

Behaviour is steered by Redis keys the test sets, so one worker pool can serve many cases:
  <prefix>:test:sleep          seconds every reconcile sleeps (float, default 0)
  <prefix>:test:sleep:<key>    seconds this key sleeps, once (consumed by the first reconcile)
  <prefix>:test:fail:<key>     number of times this key still fails before it succeeds
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

from rollout_workers.reconcile.handlers import Handler, Result, SyncRequest
from rollout_workers.reconcile.runtime import Runtime


def recording(runtime: Runtime) -> Handler:
    r = runtime.redis
    p = f"{runtime.settings.redis.key_prefix}:test"

    def handle(request: SyncRequest) -> Result:
        key = request.key
        start = time.time()
        r.set(f"{p}:started:{key}", json.dumps({"pid": os.getpid(), "start": start}))
        seq = int(r.get(f"{p}:seq:{key}") or 0)
        once = r.getdel(f"{p}:sleep:{key}")
        if once is not None:
            delay = float(once)  # one long reconcile
        else:
            delay = random.uniform(0, float(r.get(f"{p}:sleep") or 0))  # jitter
        if delay:
            end_at = time.monotonic() + delay
            while time.monotonic() < end_at:
                time.sleep(min(0.05, max(0.0, end_at - time.monotonic())))
        failing = r.decr(f"{p}:fail:{key}") >= 0 if r.exists(f"{p}:fail:{key}") else False
        end = time.time()
        r.rpush(
            f"{p}:trace",
            json.dumps(
                {
                    "key": key,
                    "pid": os.getpid(),
                    "thread": threading.get_ident(),
                    "start": start,
                    "end": end,
                    "seq": seq,
                }
            ),
        )
        if failing:
            raise RuntimeError(f"injected failure of {key}")
        return Result.done()

    return handle
