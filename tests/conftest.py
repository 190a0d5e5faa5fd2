import pytest

import bytegraph


@pytest.fixture(autouse=True)
def fresh_bytegraph():
    """Each test starts from a clean cache, in strict mode: an internal error fails the test instead
    of falling back to eager (which would pass silently)."""
    bytegraph.reset()
    with bytegraph.config.patch(strict=True):
        yield
    bytegraph.reset()
