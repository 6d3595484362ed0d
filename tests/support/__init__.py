"""Shared test machinery: process control, polling, recording handlers."""
