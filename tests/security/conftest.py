"""The outputs every security test attacks: one world (vocab, pairs, shards, a trained run) per test module,
so a module's damage never reaches another's (tests/security/trust_world.py builds it)."""

import pytest

from tests.security.trust_world import world


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return world(tmp_path_factory)
