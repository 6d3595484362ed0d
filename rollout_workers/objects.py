"""What every layer passes around: an API object as the server sent it, and a wall clock.

Objects are kept as decoded JSON, never as models, from the watch stream to the cache to the
reconcile: fields this project does not model survive every write (patches, not replaces).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

#: An API object, or any part of one, as decoded JSON.
Obj = dict[str, Any]

#: The wall clock a controller reads (in UTC); injected, so tests control time.
Clock = Callable[[], dt.datetime]
