"""The fencing token of the cache's one writer, the leading watcher.

A leader's lease can run out while the leader is cut off from Redis (a partition, a long GC
pause) and another watcher takes over and relists. When the first one reaches Redis again it
may still be in the middle of its own relist, with objects read before the new leader's: its
writes would put the cache back in time, and its deletions remove what the new leader added.
The lease cannot stop that by itself (the old leader learns it lost only at its next renewal),
so every cache write carries a token instead:

- each new acquisition of the leader lease increments `<prefix>:watcher:fence` in the same
  script that takes the lease (watcher/leader.py), and the leader keeps the value it got;
- every cache write script (apply.lua, the type's resourceVersion) compares the token it is
  given with the current one and changes nothing when they differ; the writer then raises
  :class:`Fenced`, and the reflector relists (which, from a deposed leader, is refused again
  until it notices the lost lease and exits).

apply.lua, which runs for every watch event, reads the token from a copy in the type's
versions hash (field COPY_FIELD), in the same command as the object's entry: the first write
of a type under a token finds no copy, compares with the token itself and, when it is the
writer's, leaves a copy (and names the hash in the `copies` set). Whatever increments the
token first deletes every copy, in the same script, so a copy is always the current token.

An empty token means no fencing (a writer outside a watcher, in tests and tools).
"""

from __future__ import annotations

from dataclasses import dataclass


class Fenced(RuntimeError):
    """A cache write refused: the writer's token is not the current leader's."""


def fence_key(prefix: str) -> str:
    return f"{prefix}:watcher:fence"


#: The versions hash field holding a copy of the current token (apply.lua's FENCE).
COPY_FIELD = "!fence"


@dataclass
class Fence:
    """The token a leader got with its lease (updated when it takes the lease again)."""

    key: str
    token: str = ""

    @property
    def copies(self) -> str:
        """The set of the versions hashes that hold a copy of the token."""
        return f"{self.key}:copies"


#: Lua: a new token, every copy of the old one deleted first. KEYS[2]: the fence, KEYS[3]: its
#: copies set. Prepended to the scripts that take or hold the leader lease.
NEW_TOKEN = f"""
local function new_token()
  for _, h in ipairs(redis.call('SMEMBERS', KEYS[3])) do redis.call('HDEL', h, '{COPY_FIELD}') end
  redis.call('DEL', KEYS[3])
  return redis.call('INCR', KEYS[2])
end
"""


#: Fenced HSET of the type's resourceVersion (a bookmark, or a relist's commit).
#: KEYS: the type's versions hash, the fence. ARGV: the rv, the writer's token, the field.
SET_FENCED = """
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[1])
return 1
"""
