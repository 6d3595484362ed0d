"""The lean path for hot commands (redisclient.Direct, redisclient.Script) on a real Redis:
one connection per thread, scripts loaded on NOSCRIPT, a lost connection replaced without
losing the command, and a forked child never sharing its parent's connection."""

from __future__ import annotations

import multiprocessing
import threading

import redis

from rollout_workers import redisclient

ECHO = "redis.call('INCR', KEYS[1]) return {KEYS[1], ARGV[1]}"


def connection_id(client: redis.Redis) -> int:
    """The id of the calling thread's own connection (the one its scripts use)."""
    return int(redisclient.direct(client).call("CLIENT", "ID"))


def test_a_script_answers_as_redis_py_does_on_one_connection_per_thread(rdb: redis.Redis) -> None:
    script = redisclient.Script(rdb, ECHO)
    assert script.sha == rdb.register_script(ECHO).sha
    assert script(keys=["n"], args=["x"]) == [b"n", b"x"]
    mine = connection_id(rdb)
    rdb.config_resetstat()
    assert script(keys=["n"], args=["y"]) == [b"n", b"y"]
    assert connection_id(rdb) == mine  # the same connection again
    assert rdb.info("commandstats")["cmdstat_evalsha"]["calls"] == 1
    ids: list[int] = []

    def other_thread() -> None:
        script(keys=["n"], args=["z"])
        ids.append(connection_id(rdb))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert ids and ids[0] != mine
    assert rdb.get("n") == b"3"


def test_a_script_flushed_from_the_server_is_loaded_again(rdb: redis.Redis) -> None:
    script = redisclient.Script(rdb, ECHO)
    assert script(keys=["n"], args=["a"]) == [b"n", b"a"]
    rdb.script_flush()
    assert script(keys=["n"], args=["b"]) == [b"n", b"b"]
    assert rdb.get("n") == b"2"  # each call ran once


def test_a_killed_connection_is_replaced_and_the_command_still_runs(rdb: redis.Redis) -> None:
    script = redisclient.Script(rdb, ECHO)
    script(keys=["n"], args=["a"])
    before = connection_id(rdb)
    rdb.client_kill_filter(_id=before)
    assert script(keys=["n"], args=["b"]) == [b"n", b"b"]  # through the client, with its retries
    after = connection_id(rdb)  # and a new connection of the thread's own
    assert after != before
    assert rdb.get("n") == b"2"


def _child(script: redisclient.Script, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    script(keys=["n"], args=["child"])
    out.put(connection_id(script.client))


def test_a_forked_child_makes_its_own_connection(rdb: redis.Redis) -> None:
    script = redisclient.Script(rdb, ECHO)
    script(keys=["n"], args=["parent"])
    parent = connection_id(rdb)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child, args=(script, out))
    child.start()
    child.join(10)
    assert child.exitcode == 0
    assert out.get(timeout=5) != parent
    script(keys=["n"], args=["parent"])
    assert connection_id(rdb) == parent  # the parent's is untouched
    assert rdb.get("n") == b"3"


def test_a_script_given_a_pipeline_is_queued_on_it(rdb: redis.Redis) -> None:
    script = redisclient.Script(rdb, "return redis.call('INCR', KEYS[1])")
    pipe = rdb.pipeline()
    script(keys=["n"], client=pipe)
    script(keys=["n"], client=pipe)
    assert pipe.execute() == [1, 2]


def test_direct_replies_are_raw_and_errors_are_raised(rdb: redis.Redis) -> None:
    direct = redisclient.direct(rdb)
    assert direct is redisclient.direct(rdb)
    assert direct.call("HSET", "h", "k", "v") == 1
    assert direct.call("HGET", "h", "k") == b"v"
    rdb.set("s", "x")
    try:
        direct.call("HGET", "s", "k")
    except redis.ResponseError as err:
        assert "WRONGTYPE" in str(err)
    else:
        raise AssertionError("no error for a command on the wrong type")
    assert direct.call("HGET", "h", "k") == b"v"  # the connection is still good
