"""Ping-pong: `canary.pingPong` names two Services that swap the stable and canary roles at each
promotion, so the Service in front of the pods that become stable never changes its selector
(Argo's rollout/trafficrouting/service_helper.go).

- `status.canary.stablePingPong` says which of the two is the stable one ("ping" or "pong");
  unset means pong is the stable and ping the canary.
- While an update is in progress, the canary one is pointed at the new ReplicaSet; nothing
  points the stable one: it was the canary until the promotion flipped the roles.
- Which routers use the ping-pong Services: ALB and plugins prefer them; Istio uses them only
  when neither stableService nor canaryService is set (compatibility with older releases).
"""

from __future__ import annotations

from rollout_workers.api.rollout import CanaryStrategy, PingPongType, RolloutStatus


def is_stable_ping(status: RolloutStatus | None) -> bool:
    canary = status.canary if status is not None else None
    return canary is not None and canary.stable_ping_pong == PingPongType.PING


def calculate_flipped(status: RolloutStatus | None) -> PingPongType:
    """The stablePingPong after a promotion: the other Service."""
    return PingPongType.PONG if is_stable_ping(status) else PingPongType.PING


def stable_and_canary_services(
    canary: CanaryStrategy, status: RolloutStatus | None, *, ping_pong_preferred: bool
) -> tuple[str, str]:
    """(stable Service, canary Service) as a router sees them (Argo's
    GetStableAndCanaryServices)."""
    ping_pong = canary.ping_pong
    others_unset = not canary.stable_service and not canary.canary_service
    if ping_pong is not None and (ping_pong_preferred or others_unset):
        if is_stable_ping(status):
            return ping_pong.ping_service, ping_pong.pong_service
        return ping_pong.pong_service, ping_pong.ping_service
    return canary.stable_service or "", canary.canary_service or ""
