"""Differential tests against the tools that own the schemas: a pydantic model's and a zod
schema's JSON Schema, generated at test time by the tool itself and read by the project
with no edit, and hundreds of generated messages judged by the owning tool
(`model_validate_json`, `safeParse`), by the `jsonschema` package and by the project's
silver (the row lands in its table or in quarantine). Every verdict is the one the case
intends, or the difference is listed with its reason in `differential/known.py` (and
docs/schema-interop.md).

The models: `differential/models.py` (pydantic) and tests/interop/zod_schemas.mjs (zod,
pinned in tests/interop/package.json; without node or the packages the zod tests skip). The
messages: `differential/messages.py`, from a fixed seed. Spark parses and routes all
messages once per schema; node runs once per schema.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from pipelines.contract import read_json_schemas
from tests.pipelines.contract.differential.judges import (
    SUBJECT,
    jsonschema_verdicts,
    pydantic_verdicts,
    silver_verdicts,
    zod_missing,
    zod_run,
)
from tests.pipelines.contract.differential.known import KNOWN, LAX_COERCIONS, SCHEMA_OF
from tests.pipelines.contract.differential.messages import CASES, SCHEMAS, generate
from tests.pipelines.contract.differential.models import Order

NAME = "Order"
MESSAGES = {schema: generate(schema) for schema in SCHEMAS}
TEXTS = {schema: [m.text for m in messages] for schema, messages in MESSAGES.items()}
PATHS = {
    "kind", "order_id", "status", "placed_at", "delivery_date", "customer", "quantity",
    "discount_pct", "weight_kg", "total", "note", "gift", "coupon", "address", "lines",
    "tags",
}  # fmt: skip
BOUNDS = (
    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems",
)  # fmt: skip
KEYWORDS = (*BOUNDS, "pattern", "multipleOf", "enum", "const", "format")
needs_zod = pytest.mark.skipif(zod_missing() is not None, reason=zod_missing() or "")


def write_schema(folder: Path, schema: dict) -> Path:
    """The schema as a file named for its event type, as a team would check it in."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{NAME}.schema.json"
    path.write_text(json.dumps(schema, indent=2))
    return path


@pytest.fixture(scope="module")
def pydantic_schema(tmp_path_factory) -> Path:
    """`Order.model_json_schema()`, written to a file."""
    return write_schema(tmp_path_factory.mktemp("pydantic"), Order.model_json_schema())


@pytest.fixture(scope="module")
def zod(tmp_path_factory) -> tuple[Path, list[bool]]:
    """zod's JSON Schema of Order, written to a file, and zod's verdicts: one node run."""
    if zod_missing():
        pytest.skip(zod_missing())
    schema, verdicts = zod_run(NAME, TEXTS["zod"])
    return write_schema(tmp_path_factory.mktemp("zod"), schema), verdicts


def read(path: Path):
    return read_json_schemas([path], subjects={NAME: [SUBJECT]})


@pytest.fixture(scope="module")
def silver_pydantic(spark, pydantic_schema):
    return silver_verdicts(spark, read(pydantic_schema), TEXTS["pydantic"])


@pytest.fixture(scope="module")
def silver_zod(spark, zod):
    return silver_verdicts(spark, read(zod[0]), TEXTS["zod"])


def assert_agrees(judge: str, verdicts: list[bool], rules: dict[int, list[str]] | None = None):
    """Each verdict is the one its case intends, or (judge, case) is in KNOWN, and each
    KNOWN entry of the judge differs on every message of its case."""
    outcomes: dict[str, set[bool]] = defaultdict(set)
    unexpected = []
    for index, (message, verdict) in enumerate(
        zip(MESSAGES[SCHEMA_OF[judge]], verdicts, strict=True)
    ):
        differs = verdict != message.valid
        outcomes[message.label].add(differs)
        if differs and (judge, message.label) not in KNOWN:
            broke = "" if rules is None else f" (failed {rules.get(index, [])})"
            said = "valid" if verdict else "invalid"
            unexpected.append(f"{message.label}: {judge} says {said}{broke}: {message.text}")
    listed = {label for j, label in KNOWN if j == judge}
    stale = sorted(label for label in listed if outcomes[label] != {True})
    assert not unexpected, f"{len(unexpected)} unexplained verdicts:\n" + "\n".join(unexpected)
    assert not stale, f"listed in KNOWN for {judge} but not differing on every message: {stale}"


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_messages_are_hundreds_and_the_same_for_the_same_seed(schema):
    messages = MESSAGES[schema]
    valid = sum(m.valid for m in messages)

    assert len(messages) >= 500 and 200 <= valid <= len(messages) - 300
    assert [m.text for m in generate(schema)] == TEXTS[schema]
    assert len({m.label for m in messages}) == len(CASES) + 1


def schema_keywords(schema: dict) -> set[str]:
    """`<path>.<keyword>` for every constraint of every property (and `null`, `type`,
    `required` or `optional`), as the cases' labels name them."""
    found: set[str] = set()

    def resolve(node: dict) -> dict:
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        return node

    def walk(node: dict, path: str) -> None:
        node = resolve(node)
        for branch in node.get("anyOf", []):
            if resolve(branch).get("type") == "null":
                found.add(f"{path}.null")
            else:
                walk(branch, path)
        if isinstance(node.get("type"), list) and "null" in node["type"]:
            found.add(f"{path}.null")
        # zod writes its format's regular expression as `pattern` too: the format's cases
        found.update(
            f"{path}.{k}"
            for k in KEYWORDS
            if k in node and not (k == "pattern" and "format" in node)
        )
        if node.get("additionalProperties") is False:
            found.add(f"{path}.additionalProperties")
        for key, prop in node.get("properties", {}).items():
            child = key if path == "(root)" else f"{path}.{key}"
            needed = "required" if key in node.get("required", []) else "optional"
            found.update({f"{child}.{needed}", f"{child}.type", f"{child}.null"})
            walk(prop, child)
        if "items" in node:
            found.update({f"{path}[].type", f"{path}[].null"})
            walk(node["items"], f"{path}[]")

    walk(schema, "(root)")
    return found


def test_every_keyword_of_the_pydantic_schema_has_cases_at_inside_and_outside_its_bounds(
    pydantic_schema,
):
    assert_covered(json.loads(pydantic_schema.read_text()))


@needs_zod
def test_every_keyword_of_the_zod_schema_has_cases_at_inside_and_outside_its_bounds(zod):
    assert_covered(json.loads(zod[0].read_text()))


def assert_covered(schema: dict) -> None:
    variants: dict[str, set[str]] = defaultdict(set)
    for case in CASES:
        keyword, variant = case.label.rsplit(".", 1)
        variants[keyword].add(variant)
    needed = schema_keywords(schema)
    bounds = {k for k in needed if k.rsplit(".", 1)[1] in BOUNDS}

    assert needed - set(variants) == set()
    thin = {k: sorted(variants[k]) for k in bounds if not {"at", "inside"} <= variants[k]}
    assert thin == {}
    assert {k for k in bounds if not variants[k] & {"below", "above", "empty"}} == set()


def test_pydantic_agrees_with_every_case_but_the_known_differences():
    assert_agrees("pydantic", pydantic_verdicts(Order, TEXTS["pydantic"]))


def test_lax_pydantic_would_take_what_json_schema_refuses():
    lax = pydantic_verdicts(Order, TEXTS["pydantic"], strict=False)
    differs = {m.label for m, v in zip(MESSAGES["pydantic"], lax, strict=True) if v != m.valid}
    strict_only = {label for judge, label in KNOWN if judge == "pydantic"}
    integral = {"quantity.type.integral_float", "discount_pct.type.integral_float"}

    assert differs == (strict_only - integral) | set(LAX_COERCIONS)


def test_jsonschema_on_the_pydantic_schema_agrees_but_the_known_differences(pydantic_schema):
    schema = json.loads(pydantic_schema.read_text())

    assert_agrees("jsonschema[pydantic]", jsonschema_verdicts(schema, TEXTS["pydantic"]))


@needs_zod
def test_zod_agrees_with_every_case_but_the_known_differences(zod):
    assert_agrees("zod", zod[1])


@needs_zod
def test_jsonschema_on_the_zod_schema_agrees_but_the_known_differences(zod):
    schema = json.loads(zod[0].read_text())

    assert_agrees("jsonschema[zod]", jsonschema_verdicts(schema, TEXTS["zod"]))


def test_the_pydantic_schema_is_read_with_no_edit(pydantic_schema):
    (event,) = read(pydantic_schema).event_types

    assert (event.name, event.subjects) == (NAME, (SUBJECT,))
    assert {f.path for f in event.fields} == PATHS


@needs_zod
def test_the_zod_schema_is_read_with_no_edit(zod):
    (event,) = read(zod[0]).event_types

    assert (event.name, event.subjects) == (NAME, (SUBJECT,))
    assert {f.path for f in event.fields} == PATHS


def test_silver_of_the_pydantic_schema_agrees_but_the_known_differences(silver_pydantic):
    verdicts, rules = silver_pydantic

    assert_agrees("silver[pydantic]", verdicts, rules)


@needs_zod
def test_silver_of_the_zod_schema_agrees_but_the_known_differences(silver_zod):
    verdicts, rules = silver_zod

    assert_agrees("silver[zod]", verdicts, rules)
