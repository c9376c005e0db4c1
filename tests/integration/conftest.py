"""Fixtures shared by the attack tests: ``scene`` (alice owns a database, bob is a stranger)."""

from tests.integration.test_attacks import scene  # noqa: F401  (registers the fixture for every module here)
