"""The one place that talks to the Kubernetes API server, through the official client.

Objects travel as plain JSON dicts exactly as the server sent them (lists and watches are read
with `_preload_content=False`), so fields this project does not model are never lost.
"""
