"""Setting rollout conditions follows Argo's rules."""

from __future__ import annotations

from rollout_workers.api.base import ConditionStatus as S
from rollout_workers.api.rollout import RolloutConditionType as T
from rollout_workers.api.rollout import RolloutStatus
from rollout_workers.rollout import conditions as c


def test_same_status_and_reason_changes_nothing() -> None:
    status = RolloutStatus()
    assert c.set_condition(status, c.new_condition(T.PAUSED, S.TRUE, "R", "m", now="t1"))
    assert not c.set_condition(status, c.new_condition(T.PAUSED, S.TRUE, "R", "other", now="t2"))
    cond = c.get_condition(status, T.PAUSED)
    assert cond is not None and (cond.message, cond.last_update_time) == ("m", "t1")


def test_same_status_keeps_transition_time() -> None:
    status = RolloutStatus()
    c.set_condition(status, c.new_condition(T.PROGRESSING, S.TRUE, "A", "m", now="t1"))
    c.set_condition(status, c.new_condition(T.PROGRESSING, S.TRUE, "B", "m", now="t2"))
    cond = c.get_condition(status, T.PROGRESSING)
    assert cond is not None
    assert (cond.reason, cond.last_update_time, cond.last_transition_time) == ("B", "t2", "t1")
    c.set_condition(status, c.new_condition(T.PROGRESSING, S.FALSE, "C", "m", now="t3"))
    cond = c.get_condition(status, T.PROGRESSING)
    assert cond is not None and cond.last_transition_time == "t3"


def test_replaced_condition_moves_last_and_remove() -> None:
    status = RolloutStatus()
    for t in (T.PROGRESSING, T.AVAILABLE):
        c.set_condition(status, c.new_condition(t, S.TRUE, "R", "m", now="t"))
    c.set_condition(status, c.new_condition(T.PROGRESSING, S.FALSE, "X", "m", now="t"))
    assert [x.type for x in status.conditions or []] == [T.AVAILABLE, T.PROGRESSING]
    c.remove_condition(status, T.AVAILABLE)
    assert [x.type for x in status.conditions or []] == [T.PROGRESSING]
