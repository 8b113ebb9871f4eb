"""Order messages, generated from a seed: valid ones, and each case of `CASES` (a boundary
at, just inside or just outside a constraint, a wrong type, a missing required field, null
on a nullable or non-nullable one, an undeclared field, a bad format, a payload that is not
one JSON object) applied to several valid ones.

A case's label is `<schema path>.<keyword>.<what>`: `customer.minLength.below`,
`lines[].qty.exclusiveMinimum.at`, `(root).additionalProperties.extra`. The schema path is
the property path in the JSON Schema (`[]` for an array's items), the keyword the JSON
Schema keyword the case exercises (`required`, `null`, `type`, ...), so that
`test_schema_differential` can check that every keyword of both generated schemas has cases.

A case says whether the message is valid for the shape the models mean (`Case.valid`): JSON
Schema's reading of the constraint (an integer-valued number such as 5.0 is an integer,
lengths count code points, RFC 3339 date-times and RFC 4122 UUIDs). Where the pydantic and
zod shapes differ on purpose (pydantic's Decimal is sent as text and has at most two
decimals, zod's total is a plain number), the verdict is given per schema, and the total is
written as each tool's producers write it (`Money`).
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SCHEMAS = ("pydantic", "zod")
SEED = 20261126
BASES_PER_CASE = 3
VALID_MESSAGES = 60
MISSING = object()  # a change that removes the key


@dataclass(frozen=True)
class Message:
    """One message as published, and whether its schema's shape takes it."""

    label: str
    text: str
    valid: bool


@dataclass(frozen=True)
class Money:
    """An amount as each tool's producers send it: pydantic writes a Decimal as a JSON
    string ("12.50", `model_dump_json`), zod's total is a JSON number."""

    text: str

    def wire(self, schema: str) -> str | int | float:
        if schema == "pydantic":
            return self.text
        return float(self.text) if "." in self.text else int(self.text)


@dataclass(frozen=True)
class Case:
    """Changes applied to a valid order (a value, MISSING, or a function of the rng), or a
    function making the payload's text from a valid order's."""

    label: str
    valid: bool | dict[str, bool]
    changes: dict[str, Any]
    text: Callable[[str], str] | None = None


def _word(rng: random.Random, size: int, first: str = string.ascii_lowercase) -> str:
    rest = string.ascii_lowercase + string.digits + "_"
    return rng.choice(first) + "".join(rng.choice(rest) for _ in range(size - 1))


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _timestamp(rng: random.Random) -> str:
    day = f"20{rng.randint(20, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    fraction = rng.choice(["", ".5", ".123", ".123456"])
    zone = rng.choice(["Z", "Z", "+02:00", "-05:30", "+00:00"])
    return f"{day}T{clock}{fraction}{zone}"


def _line(rng: random.Random) -> dict:
    return {"sku": f"SKU-{rng.randint(0, 9999):04d}", "qty": rng.randint(1, 99)}


def _lines(count: int) -> Callable[[random.Random], list]:
    return lambda rng: [_line(rng) for _ in range(count)]


def _tags(*sizes: int) -> Callable[[random.Random], list]:
    return lambda rng: [_word(rng, size, string.ascii_lowercase) for size in sizes]


def valid_order(rng: random.Random) -> dict:
    """An order every tool should take, its optional fields present, null or absent."""
    order = {
        "kind": "order",
        "order_id": _uuid4(rng),
        "status": rng.choice(["placed", "paid", "shipped"]),
        "placed_at": _timestamp(rng),
        "customer": _word(rng, rng.randint(3, 20)),
        "quantity": rng.randint(1, 100),
        "weight_kg": rng.choice([rng.randint(1, 1000), round(rng.uniform(0.001, 1000), 3)]),
        "total": Money(f"{rng.randint(0, 9_999_900) / 100:.2f}"),
        "coupon": rng.choice([None, "SAVE10", "WELCOME"]),
        "address": {
            "street": _word(rng, rng.randint(1, 40), string.ascii_letters),
            "zip": f"{rng.randint(0, 99999):05d}",
            "country": rng.choice(["DE", "FR", "NL"]),
        },
        "lines": _lines(rng.randint(1, 5))(rng),
    }
    optional = {
        "delivery_date": [None, f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"],
        "discount_pct": [rng.randrange(0, 50, 5)],
        "note": [None, " ".join(_word(rng, 5) for _ in range(rng.randint(1, 8)))],
        "gift": [True, False],
        "tags": [_tags(*(rng.randint(1, 8) for _ in range(rng.randint(0, 3))))(rng)],
    }
    for key, values in optional.items():
        choice = rng.choice([MISSING, *values])
        if choice is not MISSING:
            order[key] = choice
    return order


def _set(order: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    target: Any = order
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if isinstance(target, list):
        target[int(last)] = value
    elif value is MISSING:
        target.pop(last, None)
    else:
        target[last] = value


def _duplicate_key(text: str) -> str:
    """The quantity given twice, the last one valid (as JSON parsers read it, the last wins)."""
    return '{"quantity": 500, ' + text[1:]


U = "12345678-1234-4234-8234-123456789abc"
NOT_RFC9562 = "12345678-1234-1234-1234-123456789abc"  # version 1 digit and variant both 1
OK, BAD = True, False
# fmt: off
CASES: tuple[Case, ...] = (
    # kind: const
    Case("kind.const.other", BAD, {"kind": "refund"}),
    Case("kind.const.case", BAD, {"kind": "Order"}),
    Case("kind.type.number", BAD, {"kind": 1}),
    Case("kind.null.not_nullable", BAD, {"kind": None}),
    Case("kind.required.missing", BAD, {"kind": MISSING}),
    # order_id: format uuid
    Case("order_id.format.uppercase", OK, {"order_id": U.upper()}),
    Case("order_id.format.nil", OK, {"order_id": "00000000-0000-0000-0000-000000000000"}),
    Case("order_id.format.not_rfc9562_version", OK, {"order_id": NOT_RFC9562}),
    Case("order_id.format.no_hyphens", BAD, {"order_id": U.replace("-", "")}),
    Case("order_id.format.braces", BAD, {"order_id": "{" + U + "}"}),
    Case("order_id.format.urn", BAD, {"order_id": "urn:uuid:" + U}),
    Case("order_id.format.short", BAD, {"order_id": U[:-1]}),
    Case("order_id.format.not_hex", BAD, {"order_id": U[:-1] + "g"}),
    Case("order_id.format.words", BAD, {"order_id": "not-a-uuid"}),
    Case("order_id.type.number", BAD, {"order_id": 123}),
    Case("order_id.null.not_nullable", BAD, {"order_id": None}),
    Case("order_id.required.missing", BAD, {"order_id": MISSING}),
    # status: enum by $ref
    Case("status.enum.placed", OK, {"status": "placed"}),
    Case("status.enum.paid", OK, {"status": "paid"}),
    Case("status.enum.shipped", OK, {"status": "shipped"}),
    Case("status.enum.case", BAD, {"status": "PAID"}),
    Case("status.enum.other", BAD, {"status": "cancelled"}),
    Case("status.enum.empty", BAD, {"status": ""}),
    Case("status.type.number", BAD, {"status": 1}),
    Case("status.null.not_nullable", BAD, {"status": None}),
    Case("status.required.missing", BAD, {"status": MISSING}),
    # placed_at: format date-time (RFC 3339)
    Case("placed_at.format.utc", OK, {"placed_at": "2026-11-21T10:00:00Z"}),
    Case("placed_at.format.offset", OK, {"placed_at": "2026-11-21T10:00:00+02:00"}),
    Case("placed_at.format.fraction", OK, {"placed_at": "2026-11-21T10:00:00.123456Z"}),
    Case("placed_at.format.lowercase", OK, {"placed_at": "2026-11-21t10:00:00z"}),
    Case("placed_at.format.no_offset", BAD, {"placed_at": "2026-11-21T10:00:00"}),
    Case("placed_at.format.date_only", BAD, {"placed_at": "2026-11-21"}),
    Case("placed_at.format.space", BAD, {"placed_at": "2026-11-21 10:00:00Z"}),
    Case("placed_at.format.no_seconds", BAD, {"placed_at": "2026-11-21T10:00Z"}),
    Case("placed_at.format.hour_24", BAD, {"placed_at": "2026-11-21T24:00:00Z"}),
    Case("placed_at.format.february_30", BAD, {"placed_at": "2026-02-30T10:00:00Z"}),
    Case("placed_at.format.epoch_text", BAD, {"placed_at": "1795255200"}),
    Case("placed_at.type.epoch_number", BAD, {"placed_at": 1795255200}),
    Case("placed_at.null.not_nullable", BAD, {"placed_at": None}),
    Case("placed_at.required.missing", BAD, {"placed_at": MISSING}),
    # delivery_date: optional, nullable, format date
    Case("delivery_date.format.leap_day", OK, {"delivery_date": "2028-02-29"}),
    Case("delivery_date.format.not_leap", BAD, {"delivery_date": "2026-02-29"}),
    Case("delivery_date.format.month_13", BAD, {"delivery_date": "2026-13-01"}),
    Case("delivery_date.format.compact", BAD, {"delivery_date": "20261121"}),
    Case("delivery_date.format.short_parts", BAD, {"delivery_date": "2026-1-5"}),
    Case("delivery_date.format.midnight", BAD, {"delivery_date": "2026-11-21T00:00:00Z"}),
    Case("delivery_date.type.number", BAD, {"delivery_date": 20261121}),
    Case("delivery_date.null.nullable", OK, {"delivery_date": None}),
    Case("delivery_date.optional.absent", OK, {"delivery_date": MISSING}),
    # customer: minLength 3, maxLength 20, pattern
    Case("customer.minLength.at", OK, {"customer": "abc"}),
    Case("customer.minLength.inside", OK, {"customer": "abcd"}),
    Case("customer.minLength.below", BAD, {"customer": "ab"}),
    Case("customer.minLength.empty", BAD, {"customer": ""}),
    Case("customer.maxLength.at", OK, {"customer": "a" * 20}),
    Case("customer.maxLength.inside", OK, {"customer": "a" * 19}),
    Case("customer.maxLength.above", BAD, {"customer": "a" * 21}),
    Case("customer.pattern.underscore_digit", OK, {"customer": "a_1"}),
    Case("customer.pattern.upper_first", BAD, {"customer": "Abc"}),
    Case("customer.pattern.digit_first", BAD, {"customer": "1abc"}),
    Case("customer.pattern.hyphen", BAD, {"customer": "abc-d"}),
    Case("customer.pattern.space", BAD, {"customer": "abc d"}),
    Case("customer.pattern.trailing_newline", BAD, {"customer": "abcd\n"}),
    Case("customer.pattern.leading_newline", BAD, {"customer": "\nabcd"}),
    Case("customer.type.number", BAD, {"customer": 123}),
    Case("customer.null.not_nullable", BAD, {"customer": None}),
    Case("customer.required.missing", BAD, {"customer": MISSING}),
    # quantity: integer, minimum 1, maximum 100
    Case("quantity.minimum.at", OK, {"quantity": 1}),
    Case("quantity.minimum.inside", OK, {"quantity": 2}),
    Case("quantity.minimum.below", BAD, {"quantity": 0}),
    Case("quantity.minimum.negative", BAD, {"quantity": -1}),
    Case("quantity.maximum.at", OK, {"quantity": 100}),
    Case("quantity.maximum.inside", OK, {"quantity": 99}),
    Case("quantity.maximum.above", BAD, {"quantity": 101}),
    Case("quantity.maximum.huge", BAD, {"quantity": 2**63}),
    Case("quantity.type.integral_float", OK, {"quantity": 5.0}),
    Case("quantity.type.fraction", BAD, {"quantity": 5.5}),
    Case("quantity.type.numeric_string", BAD, {"quantity": "5"}),
    Case("quantity.type.boolean", BAD, {"quantity": True}),
    Case("quantity.null.not_nullable", BAD, {"quantity": None}),
    Case("quantity.required.missing", BAD, {"quantity": MISSING}),
    # discount_pct: optional, not nullable, minimum 0, exclusiveMaximum 50, multipleOf 5
    Case("discount_pct.minimum.at", OK, {"discount_pct": 0}),
    Case("discount_pct.minimum.inside", OK, {"discount_pct": 5}),
    Case("discount_pct.minimum.below", BAD, {"discount_pct": -5}),
    Case("discount_pct.exclusiveMaximum.at", BAD, {"discount_pct": 50}),
    Case("discount_pct.exclusiveMaximum.inside", OK, {"discount_pct": 45}),
    Case("discount_pct.exclusiveMaximum.above", BAD, {"discount_pct": 55}),
    Case("discount_pct.multipleOf.multiple", OK, {"discount_pct": 10}),
    Case("discount_pct.multipleOf.just_above", BAD, {"discount_pct": 11}),
    Case("discount_pct.multipleOf.just_below", BAD, {"discount_pct": 9}),
    Case("discount_pct.type.integral_float", OK, {"discount_pct": 10.0}),
    Case("discount_pct.type.fraction", BAD, {"discount_pct": 2.5}),
    Case("discount_pct.null.not_nullable", BAD, {"discount_pct": None}),
    Case("discount_pct.optional.absent", OK, {"discount_pct": MISSING}),
    # weight_kg: number, exclusiveMinimum 0, maximum 1000
    Case("weight_kg.exclusiveMinimum.at", BAD, {"weight_kg": 0}),
    Case("weight_kg.exclusiveMinimum.inside", OK, {"weight_kg": 0.001}),
    Case("weight_kg.exclusiveMinimum.below", BAD, {"weight_kg": -0.5}),
    Case("weight_kg.maximum.at", OK, {"weight_kg": 1000}),
    Case("weight_kg.maximum.inside", OK, {"weight_kg": 999.999}),
    Case("weight_kg.maximum.above", BAD, {"weight_kg": 1000.001}),
    Case("weight_kg.type.integer", OK, {"weight_kg": 5}),
    Case("weight_kg.type.numeric_string", BAD, {"weight_kg": "5"}),
    Case("weight_kg.null.not_nullable", BAD, {"weight_kg": None}),
    Case("weight_kg.required.missing", BAD, {"weight_kg": MISSING}),
    # total: pydantic Decimal(ge=0, le=99999, max_digits=7, decimal_places=2), sent as text;
    # zod a number (Money: each tool's wire form)
    Case("total.minimum.at", OK, {"total": Money("0")}),
    Case("total.minimum.inside", OK, {"total": Money("0.01")}),
    Case("total.minimum.below", BAD, {"total": Money("-0.01")}),
    Case("total.maximum.at", OK, {"total": Money("99999")}),
    Case("total.maximum.inside", OK, {"total": Money("99998.99")}),
    Case("total.maximum.above", BAD, {"total": Money("99999.01")}),
    Case("total.decimal_places.three", {"pydantic": BAD, "zod": OK}, {"total": Money("12.345")}),
    Case("total.decimal_places.trailing_zero", OK, {"total": Money("12.340")}),
    Case("total.type.number", OK, {"total": 12.34}),
    Case("total.type.integer", OK, {"total": 100}),
    Case("total.type.exponent_text", {"pydantic": OK, "zod": BAD}, {"total": "1e3"}),
    Case("total.type.padded_text", {"pydantic": OK, "zod": BAD}, {"total": " 12.34 "}),
    Case("total.type.underscore_text", BAD, {"total": "1_000"}),
    Case("total.type.nan_text", BAD, {"total": "NaN"}),
    Case("total.type.word", BAD, {"total": "abc"}),
    Case("total.type.boolean", BAD, {"total": True}),
    Case("total.null.not_nullable", BAD, {"total": None}),
    Case("total.required.missing", BAD, {"total": MISSING}),
    # note: optional, nullable, maxLength 50
    Case("note.maxLength.at", OK, {"note": "n" * 50}),
    Case("note.maxLength.inside", OK, {"note": "n" * 49}),
    Case("note.maxLength.above", BAD, {"note": "n" * 51}),
    Case("note.maxLength.astral_at", OK, {"note": "\U0001f600" * 50}),
    Case("note.maxLength.astral_above", BAD, {"note": "\U0001f600" * 51}),
    Case("note.maxLength.astral_inside", OK, {"note": "\U0001f600" * 30}),
    Case("note.type.number", BAD, {"note": 5}),
    Case("note.null.nullable", OK, {"note": None}),
    Case("note.optional.absent", OK, {"note": MISSING}),
    # gift: optional boolean, not nullable
    Case("gift.type.true", OK, {"gift": True}),
    Case("gift.type.text", BAD, {"gift": "true"}),
    Case("gift.type.number", BAD, {"gift": 1}),
    Case("gift.null.not_nullable", BAD, {"gift": None}),
    Case("gift.optional.absent", OK, {"gift": MISSING}),
    # coupon: required and nullable
    Case("coupon.type.text", OK, {"coupon": "SAVE10"}),
    Case("coupon.type.number", BAD, {"coupon": 5}),
    Case("coupon.null.nullable", OK, {"coupon": None}),
    Case("coupon.required.missing", BAD, {"coupon": MISSING}),
    # address: a required nested object, additionalProperties false
    Case("address.type.text", BAD, {"address": "x"}),
    Case("address.type.array", BAD, {"address": []}),
    Case("address.null.not_nullable", BAD, {"address": None}),
    Case("address.required.missing", BAD, {"address": MISSING}),
    Case("address.additionalProperties.extra", BAD, {"address.floor": 3}),
    Case("address.street.minLength.at", OK, {"address.street": "a"}),
    Case("address.street.minLength.inside", OK, {"address.street": "ab"}),
    Case("address.street.minLength.below", BAD, {"address.street": ""}),
    Case("address.street.maxLength.at", OK, {"address.street": "s" * 40}),
    Case("address.street.maxLength.inside", OK, {"address.street": "s" * 39}),
    Case("address.street.maxLength.above", BAD, {"address.street": "s" * 41}),
    Case("address.street.type.number", BAD, {"address.street": 7}),
    Case("address.street.null.not_nullable", BAD, {"address.street": None}),
    Case("address.street.required.missing", BAD, {"address.street": MISSING}),
    Case("address.zip.pattern.zeros", OK, {"address.zip": "00000"}),
    Case("address.zip.pattern.short", BAD, {"address.zip": "1234"}),
    Case("address.zip.pattern.long", BAD, {"address.zip": "123456"}),
    Case("address.zip.pattern.letter", BAD, {"address.zip": "1234a"}),
    Case("address.zip.pattern.trailing_newline", BAD, {"address.zip": "12345\n"}),
    Case("address.zip.type.number", BAD, {"address.zip": 12345}),
    Case("address.zip.null.not_nullable", BAD, {"address.zip": None}),
    Case("address.zip.required.missing", BAD, {"address.zip": MISSING}),
    Case("address.country.enum.nl", OK, {"address.country": "NL"}),
    Case("address.country.enum.case", BAD, {"address.country": "de"}),
    Case("address.country.enum.other", BAD, {"address.country": "US"}),
    Case("address.country.type.number", BAD, {"address.country": 49}),
    Case("address.country.null.not_nullable", BAD, {"address.country": None}),
    Case("address.country.required.missing", BAD, {"address.country": MISSING}),
    # lines: required array of 1..5 Line objects (additionalProperties false)
    Case("lines.minItems.at", OK, {"lines": _lines(1)}),
    Case("lines.minItems.inside", OK, {"lines": _lines(2)}),
    Case("lines.minItems.below", BAD, {"lines": []}),
    Case("lines.maxItems.at", OK, {"lines": _lines(5)}),
    Case("lines.maxItems.inside", OK, {"lines": _lines(4)}),
    Case("lines.maxItems.above", BAD, {"lines": _lines(6)}),
    Case("lines.type.object", BAD, {"lines": {"sku": "SKU-0001", "qty": 1}}),
    Case("lines.null.not_nullable", BAD, {"lines": None}),
    Case("lines.required.missing", BAD, {"lines": MISSING}),
    Case("lines[].type.text", BAD, {"lines": ["SKU-0001"]}),
    Case("lines[].null.item", BAD, {"lines": [None]}),
    Case("lines[].additionalProperties.extra", BAD, {"lines.0.color": "red"}),
    Case("lines[].sku.pattern.zeros", OK, {"lines.0.sku": "SKU-0000"}),
    Case("lines[].sku.pattern.short", BAD, {"lines.0.sku": "SKU-123"}),
    Case("lines[].sku.pattern.long", BAD, {"lines.0.sku": "SKU-12345"}),
    Case("lines[].sku.pattern.case", BAD, {"lines.0.sku": "sku-1234"}),
    Case("lines[].sku.type.number", BAD, {"lines.0.sku": 1234}),
    Case("lines[].sku.null.not_nullable", BAD, {"lines.0.sku": None}),
    Case("lines[].sku.required.missing", BAD, {"lines.0.sku": MISSING}),
    Case("lines[].qty.exclusiveMinimum.at", BAD, {"lines.0.qty": 0}),
    Case("lines[].qty.exclusiveMinimum.inside", OK, {"lines.0.qty": 1}),
    Case("lines[].qty.exclusiveMinimum.below", BAD, {"lines.0.qty": -1}),
    Case("lines[].qty.maximum.at", OK, {"lines.0.qty": 99}),
    Case("lines[].qty.maximum.inside", OK, {"lines.0.qty": 98}),
    Case("lines[].qty.maximum.above", BAD, {"lines.0.qty": 100}),
    Case("lines[].qty.type.numeric_string", BAD, {"lines.0.qty": "2"}),
    Case("lines[].qty.null.not_nullable", BAD, {"lines.0.qty": None}),
    Case("lines[].qty.required.missing", BAD, {"lines.0.qty": MISSING}),
    # tags: optional array of at most 3 strings of 1..8 characters, not nullable
    Case("tags.maxItems.empty", OK, {"tags": []}),
    Case("tags.maxItems.at", OK, {"tags": _tags(1, 2, 3)}),
    Case("tags.maxItems.inside", OK, {"tags": _tags(4, 5)}),
    Case("tags.maxItems.above", BAD, {"tags": _tags(1, 2, 3, 4)}),
    Case("tags.type.text", BAD, {"tags": "a"}),
    Case("tags.null.not_nullable", BAD, {"tags": None}),
    Case("tags.optional.absent", OK, {"tags": MISSING}),
    Case("tags[].minLength.at", OK, {"tags": ["a"]}),
    Case("tags[].minLength.inside", OK, {"tags": ["ab"]}),
    Case("tags[].minLength.below", BAD, {"tags": [""]}),
    Case("tags[].maxLength.at", OK, {"tags": ["t" * 8]}),
    Case("tags[].maxLength.inside", OK, {"tags": ["t" * 7]}),
    Case("tags[].maxLength.above", BAD, {"tags": ["t" * 9]}),
    Case("tags[].maxLength.astral_at", OK, {"tags": ["\U0001f600" * 8]}),
    Case("tags[].maxLength.astral_above", BAD, {"tags": ["\U0001f600" * 9]}),
    Case("tags[].type.number", BAD, {"tags": [5]}),
    Case("tags[].null.item", BAD, {"tags": ["a", None]}),
    # the payload as a whole
    Case("(root).additionalProperties.extra", BAD, {"channel": "web"}),
    Case("(root).additionalProperties.extra_null", BAD, {"channel": None}),
    Case("(root).type.array", BAD, {}, lambda text: f"[{text}]"),
    Case("(root).type.null", BAD, {}, lambda text: "null"),
    Case("(root).type.string", BAD, {}, json.dumps),
    Case("(root).required.empty_object", BAD, {}, lambda text: "{}"),
    Case("(root).json.not_json", BAD, {}, lambda text: "order: 1"),
    Case("(root).json.truncated", BAD, {}, lambda text: text[:-1]),
    Case("(root).json.trailing_text", BAD, {}, lambda text: text + " x"),
    Case("(root).json.duplicate_key", OK, {}, _duplicate_key),
)
# fmt: on


def _text(order: dict, schema: str) -> str:
    if isinstance(order.get("total"), Money):
        order = {**order, "total": order["total"].wire(schema)}
    return json.dumps(order)


def generate(schema: str, seed: int = SEED) -> list[Message]:
    """The messages for `schema` ("pydantic" or "zod"): `VALID_MESSAGES` valid orders, then
    each case on `BASES_PER_CASE` valid orders. The same list for the same seed, and the
    same messages for both schemas but for the total's wire form (`Money`)."""
    rng = random.Random(seed)
    found = [
        Message("valid.generated", _text(valid_order(rng), schema), OK)
        for _ in range(VALID_MESSAGES)
    ]
    for case in CASES:
        valid = case.valid[schema] if isinstance(case.valid, dict) else case.valid
        for _ in range(BASES_PER_CASE):
            order = valid_order(rng)
            for path, value in case.changes.items():
                _set(order, path, value(rng) if callable(value) else value)
            text = _text(order, schema)
            if case.text is not None:
                text = case.text(text)
            found.append(Message(case.label, text, valid))
    return found
