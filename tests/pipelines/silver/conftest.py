"""The ORDERS stage tests' table locations under the test's table root."""

import pytest


@pytest.fixture
def paths(table_root) -> dict:
    return {
        "bronze_path": str(table_root / "bronze/orders"),
        "table_paths": {
            "OrderPlaced": str(table_root / "silver/orders_placed"),
            "OrderShipped": str(table_root / "silver/orders_shipped"),
        },
        "quarantine_path": str(table_root / "quarantine/orders"),
    }
