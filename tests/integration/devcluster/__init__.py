"""Conformance tests of the devcluster through the official kubernetes client and kubectl."""
