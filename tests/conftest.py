import pytest

import bytegraph


@pytest.fixture(autouse=True)
def fresh_bytegraph():
    bytegraph.reset()
    yield
    bytegraph.reset()
