"""Extract the templates of Argo Rollouts' notification catalog into test data.

Every string field of every ``template.*`` entry (message, email.subject, slack.attachments,
...) is one Go template, as notifications-engine parses them one by one. Regenerate with::

    git -C /work/.mirror/argoproj+argo-rollouts/repo show \\
        v1.9.1:manifests/notifications-install.yaml \\
      | python tests/support/extract_notification_catalog.py \\
      > tests/unit/notifications/testdata/catalog-v1.9.1.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml


def _leaves(prefix: str, node: Any) -> list[tuple[str, str]]:
    if isinstance(node, str):
        return [(prefix, node)]
    if isinstance(node, dict):
        out: list[tuple[str, str]] = []
        for k, v in node.items():
            out.extend(_leaves(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            out.extend(_leaves(f"{prefix}[{i}]", v))
        return out
    return []


def main() -> None:
    cases = []
    for doc in yaml.safe_load_all(sys.stdin):
        if not doc or doc.get("kind") != "ConfigMap":
            continue
        for key, value in sorted(doc.get("data", {}).items()):
            if not key.startswith("template."):
                continue
            name = key[len("template.") :]
            for field, text in _leaves("", yaml.safe_load(value)):
                cases.append({"name": name, "field": field, "template": text})
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
