"""Hashes: FNV-32a as Go computes it, encoded as Kubernetes encodes it."""

from __future__ import annotations

from rollout_workers.rollout.hashing import fnv32a, pod_template_hash, safe_encode


def test_fnv32a_known_values() -> None:
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968


def test_safe_encode_has_no_vowels() -> None:
    encoded = safe_encode("3826002220")
    assert len(encoded) == 10 and not set(encoded) & set("aeiou013")


def test_template_hash_is_stable_and_sensitive() -> None:
    t = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"image": "x:1"}]}}
    same = {"spec": {"containers": [{"image": "x:1"}]}, "metadata": {"labels": {"app": "a"}}}
    assert pod_template_hash(t, None) == pod_template_hash(same, None)
    assert pod_template_hash(t, None) != pod_template_hash(t, 1)
    assert pod_template_hash(t, 1) != pod_template_hash(t, 2)
    changed = {**t, "spec": {"containers": [{"image": "x:2"}]}}
    assert pod_template_hash(t, None) != pod_template_hash(changed, None)
