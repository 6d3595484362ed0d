"""Runs the beat process: celery beat with the redbeat scheduler, and the timer tick.

The schedule and the beat lock live in Redis, so any number of beat processes may run; one
holds the lock and sends, the others wait on it. The lock lives `beat.lock_timeout` seconds
unrefreshed (redbeat's default is five loop intervals, 25 minutes), so a standby takes over
within that many seconds of the active beat's death.

The timer tick (due timers, expired leases, lost messages back onto the queues) runs inside the
scheduler's loop, every `beat.tick_interval`: redbeat only enters that loop once it holds the
lock and extends the lock on every pass (a lost lock stops beat), so only the lock holder ticks.
The loop sleeps until the next tick is due, which keeps timers as precise as a tick task was
without a Celery message per second.

Between ticks, timer passes run in a thread of its own while this beat leads (TimerPasses):
a kind's pass queues only its due timers (one small script) and learns when the earliest one
left is due; the kind's next pass runs then (no sooner than 20 ms after, which batches dense
timers), or after `beat.timer_resolution` (0.1 s) if that is sooner, for timers set meanwhile.
So a requeue-after, a pause or an analysis interval ends on time (within the resolution when
it was set less than that before it is due), as Argo's delaying queue ends it, rather than up
to a tick interval late. A pass of a beat that has just lost the lock and does not know it yet
is harmless: a timer is taken from its zset and queued in one script, once.

Health (`/healthz`, `/readyz` on `health.port`): live unless, while holding the lock, no tick
has succeeded for three intervals; a standby waiting for the lock is live. Ready when Redis
answers a PING.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from redbeat import RedBeatScheduler
from redbeat.schedulers import RedBeatSchedulerEntry

from beat.schedule import RETIRED, build_schedule
from rollout_workers import health as endpoints
from rollout_workers import redisclient
from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.tasks import build_runtime, run_tick, run_timers
from rollout_workers.health import Clock, Status
from rollout_workers.logs import OutageLog
from rollout_workers.settings import RedisSettings, Settings

log = logging.getLogger(__name__)

#: The shortest wait between two timer passes of a kind: the timers due within it go in one
#: pass, so timers due every few milliseconds cost a pass per batch, not one each.
TIMER_BATCH = 0.02


class Ticker:
    """The timer tick, run by the lock holder's scheduler loop; its state feeds the probes."""

    def __init__(
        self,
        tick: Callable[[], dict[str, Any]],
        *,
        interval: float,
        redis_url: str,
        redis_settings: RedisSettings,
        clock: Clock = time.monotonic,
    ) -> None:
        self._tick, self.interval, self._clock = tick, interval, clock
        self._url, self._redis_settings = redis_url, redis_settings
        self._lock = threading.Lock()
        self.leading_since: float | None = None
        self.last_tick: float | None = None
        self._next = 0.0
        self._probe: redis.Redis | None = None
        self.outage = OutageLog("redis", log, clock)

    def standby(self) -> None:
        """The lock is another beat's now: health reports a standby until it is ours again."""
        with self._lock:
            if self.leading_since is not None:
                log.warning("beat: another beat holds the lock; waiting for it")
            self.leading_since = None

    def maybe_tick(self) -> float:
        """Tick if one is due; returns the seconds until the next is."""
        now = self._clock()
        with self._lock:
            if self.leading_since is None:
                self.leading_since = now
                log.info("beat holds the lock: ticking timers every %gs", self.interval)
        if now >= self._next:
            # Keep the cadence; after a stall, start again from now rather than catch up.
            self._next += self.interval
            if self._next <= now:
                self._next = now + self.interval
            try:
                report = self._tick()
            except redis.RedisError as err:
                self.outage.failed(err)
            except Exception:
                # Beat keeps its loop (and the resync); liveness reports the missing ticks.
                log.exception("timer tick failed")
            else:
                self.outage.ok()
                with self._lock:
                    self.last_tick = self._clock()
                if report:
                    log.debug("tick: %s", report)
        return max(0.0, self._next - self._clock())

    def leading(self) -> bool:
        """Whether this beat holds the lock, as far as its scheduler loop knows."""
        with self._lock:
            return self.leading_since is not None

    def live(self) -> Status:
        with self._lock:
            since, last = self.leading_since, self.last_tick
        if since is None:
            return Status.good("standby: waiting for the beat lock")
        age = self._clock() - (last if last is not None else since)
        bound = 3 * self.interval
        if age > bound:
            return Status.bad(f"no timer tick for {age:.1f}s (> {bound:g}s) while holding the lock")
        return Status.good(f"holding the lock; last tick {age:.1f}s ago")

    def ready(self) -> Status:
        if self._probe is None:
            self._probe = redisclient.connect(self._url, self._redis_settings, timeout=1.0)
        try:
            self._probe.ping()
        except redis.RedisError as err:
            return Status.bad(f"Redis unreachable: {err}")
        return Status.good("connected to Redis")


class TimerPasses:
    """Between ticks, each kind's due timers queued as they come due, by the lock holder.

    A kind's pass queues its due timers and learns when the earliest one left is due; its next
    pass runs then, or after `resolution` if that is sooner (for timers set meanwhile), and no
    sooner than TIMER_BATCH after this one. Only the kinds whose pass has come run.
    """

    def __init__(
        self,
        timers: Callable[[Sequence[str]], Mapping[str, float | None]],
        kinds: Sequence[str],
        *,
        leading: Callable[[], bool],
        resolution: float,
        clock: Clock = time.monotonic,
    ) -> None:
        """`timers(kinds)`: queue those kinds' due timers; the seconds until each one's earliest
        timer left (None: none)."""
        self._timers, self._leading, self._clock = timers, leading, clock
        self.resolution = resolution
        self._due = dict.fromkeys(kinds, 0.0)  # clock time of each kind's next pass
        self._failing = False

    def run_once(self) -> float:
        """The passes that have come; returns the seconds until the next one. Not leading, or
        a failed pass (the tick reports Redis outages; other errors are logged once until a
        pass succeeds): try again after `resolution`."""
        if not self._leading():
            return self.resolution
        now = self._clock()
        kinds = [kind for kind, due in self._due.items() if due <= now]
        try:
            left = self._timers(kinds)
        except redis.RedisError:
            return self.resolution
        except Exception:
            if not self._failing:
                log.exception("timer pass failed")
            self._failing = True
            return self.resolution
        self._failing = False
        for kind in kinds:
            wait = left.get(kind)
            wait = self.resolution if wait is None else max(TIMER_BATCH, wait)
            self._due[kind] = now + min(self.resolution, wait)
        return max(0.0, min(self._due.values()) - self._clock())

    def run(self, stop: threading.Event) -> None:
        """Passes until `stop` is set."""
        wait = self.resolution
        while not stop.wait(wait):
            wait = self.run_once()


#: Seconds between attempts while Redis is unreachable or the lock is held by another beat.
RETRY_INTERVAL = 1.0


def scheduler_class(ticker: Ticker) -> type[RedBeatScheduler]:
    class TickingScheduler(RedBeatScheduler):  # type: ignore[misc]
        """redbeat's scheduler, plus the timer tick on every pass of the lock holder's loop.

        Stock redbeat lets a Redis error out of its lock extension, and Celery beat exits on
        it. Here a lost connection is logged once ("redis unavailable", then "redis back
        after N s") and retried every second. A lock Redis lost (a restart without
        persistence, or one that outlived the lock's timeout) is taken again if free, and the
        schedule entries are written again (they were lost with it); a lock another beat took
        meanwhile leaves this one waiting as a standby.
        """

        def tick(self, *args: Any, **kwargs: Any) -> float:
            try:
                remaining: float = super().tick(*args, **kwargs)  # extends the lock first
            except redis.exceptions.LockError:
                return self._regain_lock()
            except redis.RedisError as err:
                ticker.outage.failed(err)
                return RETRY_INTERVAL
            if ticker.outage.ok() is not None:
                self._restore_schedule()
            return min(remaining, ticker.maybe_tick())

        def _regain_lock(self) -> float:
            try:
                taken = self.lock is not None and self.lock.acquire(blocking=False)
            except redis.RedisError as err:
                ticker.outage.failed(err)
                return RETRY_INTERVAL
            ticker.outage.ok()
            if not taken:
                ticker.standby()
                return RETRY_INTERVAL
            log.warning("beat: the lock was gone from Redis; took it again")
            self._restore_schedule()
            return 0.0

        def _restore_schedule(self) -> None:
            """Write the static schedule entries again (a no-op when Redis kept them)."""
            try:
                self.setup_schedule()
            except redis.RedisError as err:
                ticker.outage.failed(err)

    return TickingScheduler


def remove_retired_entries(app: Any) -> None:
    """Delete schedule entries an older version stored in Redis (redbeat keeps them)."""
    prefix = app.conf.redbeat_key_prefix
    for name in RETIRED:
        try:
            RedBeatSchedulerEntry.from_key(f"{prefix}{name}", app=app).delete()
        except KeyError:
            continue
        except redis.RedisError as err:
            log.warning("cannot remove the retired %s schedule entry: %s", name, err)
            continue
        log.info("removed the retired %s schedule entry", name)


def run(settings: Settings, redis_url: str) -> None:
    app = create_app(settings, redis_url)
    app.conf.beat_schedule = build_schedule(settings)
    runtime = build_runtime(app, settings, redis_url)
    ticker = Ticker(
        lambda: run_tick(runtime),
        interval=settings.beat.tick_interval,
        redis_url=redis_url,
        redis_settings=settings.redis,
    )
    passes = TimerPasses(
        lambda kinds: run_timers(runtime, kinds),
        list(runtime.queues),
        leading=ticker.leading,
        resolution=settings.beat.timer_resolution,
    )
    threading.Thread(
        target=passes.run, args=(threading.Event(),), name="timers", daemon=True
    ).start()
    h = settings.health
    endpoints.serve(address=h.address, port=h.port, live=ticker.live, ready=ticker.ready)
    remove_retired_entries(app)
    app.Beat(
        loglevel=settings.log.level,
        scheduler=scheduler_class(ticker),
        max_interval=min(settings.beat.max_loop_interval, settings.beat.tick_interval),
        no_color=True,
    ).run()
