"""Settings: env mapping, validation, masking."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rollout_workers.settings import KINDS, QueueSettings, RedisSettings, Settings, mask_url


def test_env_maps_sections_with_one_underscore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUTS_REDIS_URL", "redis://example:6379/2")
    monkeypatch.setenv("ROLLOUTS_REDIS_KEY_PREFIX", "tenant-a")
    monkeypatch.setenv("ROLLOUTS_QUEUE_LEASE_TTL", "12.5")
    monkeypatch.setenv("ROLLOUTS_QUEUE_BACKOFF_MAX", "60")
    monkeypatch.setenv("ROLLOUTS_STATE_DIR", "/tmp/somewhere")
    monkeypatch.setenv("ROLLOUTS_WORKER_CONCURRENCY", "8")
    monkeypatch.setenv("ROLLOUTS_LOG_FORMAT", "json")
    monkeypatch.setenv("ROLLOUTS_RECONCILE_HANDLERS", '{"rollouts": "m:f"}')
    s = Settings()
    assert s.redis.url == "redis://example:6379/2"
    assert s.redis.key_prefix == "tenant-a"
    assert s.queue.lease_ttl == 12.5
    assert s.queue.backoff_max == 60
    assert s.state_dir == Path("/tmp/somewhere")
    assert s.worker.concurrency == 8
    assert s.log.format == "json"
    assert s.reconcile.handlers == {"rollouts": "m:f"}


def test_every_field_has_a_description() -> None:
    def walk(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if not field.description:
                missing.append(f"{model.__name__}.{name}")
            annotation = field.annotation
            if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
                missing += walk(annotation)
        return missing

    assert walk(Settings) == []


def test_invalid_values_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUTS_QUEUE_LEASE_TTL", "-1")
    with pytest.raises(ValidationError):
        Settings()


def test_queue_for_each_kind() -> None:
    q = Settings().queue
    assert {kind: q.for_kind(kind) for kind in KINDS} == {
        "rollouts": "rollouts",
        "analysisruns": "analysis",
        "experiments": "analysis",
        "notifications": "notifications",
    }


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:s3cret@host:6379/0", "redis://:****@host:6379/0"),
        ("rediss://user:pw@host/1", "rediss://user:****@host/1"),
        (
            "sentinel://:pw@s1:26379;sentinel://s2:26379;sentinel://:pw@s3/0",
            "sentinel://:****@s1:26379;sentinel://s2:26379;sentinel://:****@s3/0",
        ),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_sentinel_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLOUTS_REDIS_URL", "sentinel://s1:26379;sentinel://s2:26379/0")
    monkeypatch.setenv("ROLLOUTS_REDIS_SENTINEL_MASTER", "rollouts")
    monkeypatch.setenv("ROLLOUTS_REDIS_SENTINEL_PASSWORD", "s-secret")
    monkeypatch.setenv("ROLLOUTS_REDIS_PASSWORD", "m-secret")
    s = Settings()
    assert s.redis.url == "sentinel://s1:26379;sentinel://s2:26379/0"
    assert s.redis.sentinel_master == "rollouts"
    assert s.redis.sentinel_password is not None
    assert s.redis.sentinel_password.get_secret_value() == "s-secret"
    assert s.redis.password is not None
    assert s.redis.password.get_secret_value() == "m-secret"
    assert "secret" not in str(s.masked()) and "secret" not in repr(s)
    assert RedisSettings().sentinel_master == "mymaster"


def test_masked_hides_secrets() -> None:
    s = Settings(redis={"url": "redis://:pw@h:1/0"}, flower={"basic_auth": "admin:pw"})
    data = s.masked()
    assert data["redis"]["url"] == "redis://:****@h:1/0"
    assert data["flower"]["basic_auth"] == "**********"
    assert "pw" not in str(data)


@pytest.mark.parametrize(
    ("fairness", "mode", "label"),
    [("namespace", "namespace", None), ("off", "off", None), ("label:team", "label", "team")],
)
def test_fairness_forms(fairness: str, mode: str, label: str | None) -> None:
    queue = QueueSettings(fairness=fairness)
    assert (queue.fair_mode, queue.tenant_label) == (mode, label)


@pytest.mark.parametrize("fairness", ["label:", "tenant", "label:-x", "Namespace"])
def test_fairness_rejects_other_forms(fairness: str) -> None:
    with pytest.raises(ValidationError):
        QueueSettings(fairness=fairness)
