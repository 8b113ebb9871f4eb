"""The pydantic side of the differential tests: an order event as a Python team writes it.

The zod side (tests/interop/zod_schemas.mjs) declares the same shape. The models are strict
(`strict=True`): in lax mode pydantic coerces what JSON Schema's `type` refuses ("5" for an
integer, "true" and 1 for a boolean, ...), so a strict model is the one whose verdicts its
own `model_json_schema()` describes; docs/schema-interop.md counts what lax mode
(`model_validate_json(text, strict=False)`) would add. `extra="forbid"` emits
`additionalProperties: false` on every object.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, conint, constr

from resources.backports import StrEnum

STRICT = ConfigDict(strict=True, extra="forbid")


class Status(StrEnum):
    """Where the order is: a `$defs` enum reached by `$ref`."""

    PLACED = "placed"
    PAID = "paid"
    SHIPPED = "shipped"


class Address(BaseModel):
    """A nested model: `$defs/Address`, flattened into columns by the contract."""

    model_config = STRICT

    street: str = Field(min_length=1, max_length=40)
    zip: constr(pattern=r"^[0-9]{5}$")
    country: Literal["DE", "FR", "NL"]


class Line(BaseModel):
    """An order line: the items of an array of objects."""

    model_config = STRICT

    sku: constr(pattern=r"^SKU-[0-9]{4}$")
    qty: conint(gt=0, le=99)


class Order(BaseModel):
    """The order event: one of each kind of field and constraint."""

    model_config = STRICT

    kind: Literal["order"]
    order_id: UUID
    status: Status
    placed_at: datetime
    delivery_date: date | None = None
    customer: constr(min_length=3, max_length=20, pattern=r"^[a-z][a-z0-9_]*$")
    quantity: conint(ge=1, le=100)
    discount_pct: int = Field(default=0, ge=0, lt=50, multiple_of=5)
    weight_kg: float = Field(gt=0, le=1000)
    total: Decimal = Field(ge=0, le=99999, max_digits=7, decimal_places=2)
    note: str | None = Field(default=None, max_length=50)
    gift: bool = False
    coupon: str | None
    address: Address
    lines: list[Line] = Field(min_length=1, max_length=5)
    tags: list[Annotated[str, Field(min_length=1, max_length=8)]] = Field(
        default_factory=list, max_length=3
    )
