"""Tests: unit (pure logic), integration (real Redis, real workers), e2e (through the CLI)."""
