"""How the contract silver's checks reach their verdicts, and what the component automates
(no Spark: the verdicts are formed from a stage result, the automation from the definitions).

`check_mostly` holds for every check: a message-level rule (`parseable_json`,
`field_types_valid`, ...) passes when at least `mostly` of the rows it judged do not break it,
as a Great Expectations check does with its expectations' `mostly`.
"""

from __future__ import annotations

from dagster import AssetKey, AutomationCondition, ComponentTree

from assets.automation import AFTER_UPSTREAM_CHECKS, AFTER_UPSTREAM_COMMITS
from assets.contract_silver import _check_results
from pipelines.components.stream import JetStreamStream
from pipelines.contract import read_contract
from pipelines.contract.rules import Rule
from pipelines.lakehouse.delta_tables import MergeOutcome
from pipelines.lakehouse.watermarks import Watermark
from pipelines.silver.stage import (
    QUARANTINE,
    ContractSilverResult,
    RuleCheck,
    rule_checks,
    within_mostly,
)
from tests.assets.test_contract_silver import CONTRACT_FILE, PLACED_KEY, QUARANTINE_KEY

CONTRACT = read_contract(CONTRACT_FILE)
DECLARED = {
    "stream": {"name": "ORDERS", "subjects": ["orders.>"]},
    "ingests": [{"name": "orders_events", "durable": "orders-bronze", "table": "bronze/orders"}],
    "contract_file": str(CONTRACT_FILE),
}
CHECKS = rule_checks(CONTRACT)
KEYS = {
    "OrderPlaced": PLACED_KEY,
    "OrderShipped": AssetKey(["silver", "orders_shipped"]),
    QUARANTINE: QUARANTINE_KEY,
}
NOTHING = MergeOutcome(0, None)


def nothing_failed(target: str) -> dict[str, int]:
    """Every rule of `target`'s checks, and its `field_rules` check, with no failing row."""
    checks = [check for check in CHECKS if check.target == target]
    return {rule.name: 0 for check in checks for rule in check.rules} | {
        check.name: 0 for check in checks
    }


# A batch of 100 rows, 60 OrderPlaced: 3 malformed payloads, 2 mistyped OrderPlaced rows.
FAILURES = {
    "OrderPlaced": nothing_failed("OrderPlaced") | {"field_types_valid": 2},
    "OrderShipped": nothing_failed("OrderShipped"),
    QUARANTINE: {"parseable_json": 3, "known_event_type": 0},
}
CHECKED = {"OrderPlaced": 60, "OrderShipped": 37, QUARANTINE: 100}


def processed(**extra) -> ContractSilverResult:
    return ContractSilverResult(1, 100, 3, 100, {}, NOTHING, failures=FAILURES, **extra)


def verdicts(result: ContractSilverResult, mostly: float) -> dict[tuple[str, str], tuple]:
    return {
        (r.asset_key.path[-1], r.check_name): (
            r.passed,
            r.metadata["failing_rows"].value,
            r.metadata.get("rows_checked") and r.metadata["rows_checked"].value,
        )
        for r in _check_results(CHECKS, KEYS, result, mostly)
    }


def test_within_mostly_is_great_expectations_mostly():
    assert within_mostly(0, 0, 1.0)  # nothing judged passes
    assert within_mostly(5, 100, 0.95) and not within_mostly(6, 100, 0.95)
    assert within_mostly(0, 10, 1.0) and not within_mostly(1, 10, 1.0)


def test_message_level_rules_pass_below_mostly_and_fail_above_it():
    loose = verdicts(processed(checked=CHECKED), mostly=0.95)
    assert loose[("orders", "parseable_json")] == (True, 3, 100)  # 3% of the batch
    assert loose[("orders_placed", "field_types_valid")] == (True, 2, 60)

    strict = verdicts(processed(checked=CHECKED), mostly=1.0)
    assert strict[("orders", "parseable_json")] == (False, 3, 100)
    assert strict[("orders_placed", "field_types_valid")] == (False, 2, 60)
    assert strict[("orders", "known_event_type")] == (True, 0, 100)

    tight = verdicts(processed(checked={**CHECKED, "OrderPlaced": 20}), mostly=0.95)
    assert tight[("orders_placed", "field_types_valid")] == (False, 2, 20)  # 10% of its rows


def test_rules_no_one_named_share_their_tables_field_rules_check():
    checks = {(check.target, check.name): check for check in CHECKS}
    assert set(checks) == {
        (QUARANTINE, "parseable_json"), (QUARANTINE, "known_event_type"),
        *(
            (event, rule)
            for event in ("OrderPlaced", "OrderShipped")
            for rule in ("required_fields_present", "field_types_valid", "event_id_unique")
        ),
        ("OrderPlaced", "order_id_format"), ("OrderShipped", "order_id_format"),  # named
        ("OrderShipped", "shipped_at_not_in_future"),  # severity: warn
        ("OrderShipped", "no_unknown_fields"),
        ("OrderPlaced", "field_rules"),
    }  # fmt: skip
    shared = checks[("OrderPlaced", "field_rules")]
    assert [r.name for r in shared.rules] == ["amount_in_range", "currency_in_allowed_values"]
    assert not shared.blocking


def test_field_rules_holds_when_each_of_its_rules_does_and_tables_the_ones_that_flagged_rows():
    failures = {**FAILURES, "OrderPlaced": FAILURES["OrderPlaced"] | {
        "amount_in_range": 3, "currency_in_allowed_values": 1, "field_rules": 4,
    }}  # fmt: skip

    def field_rules(mostly: float, **extra):
        result = ContractSilverResult(
            1, 100, 3, 100, {}, NOTHING, failures=failures, checked=CHECKED, **extra
        )
        (found,) = (
            r for r in _check_results(CHECKS, KEYS, result, mostly) if r.check_name == "field_rules"
        )
        return found

    loose = field_rules(0.95)  # 3 and 1 of 60 rows: each rule within 95%
    assert loose.passed
    assert (loose.metadata["failing_rows"].value, loose.metadata["rules"].value) == (4, 2)
    strict = field_rules(1.0)
    assert not strict.passed and strict.metadata["rules_failed"].value == 2
    table = strict.metadata["rule_failures"].value.splitlines()
    assert table[2:] == [
        "| amount_in_range | 3 |  | no |",
        "| currency_in_allowed_values | 1 |  | no |",
    ]

    # With the suite's outcomes, Great Expectations' verdict per rule decides.
    gx = {"OrderPlaced": {
        "amount_in_range": {"passed": False, "unexpected": 3, "expectations": ["a"]},
        "currency_in_allowed_values": {"passed": True, "unexpected": 1, "expectations": ["c"]},
    }}  # fmt: skip
    judged = field_rules(0.95, expectations=gx)
    assert not judged.passed and judged.metadata["verdict_from"].value == "great_expectations"
    assert judged.metadata["unexpected_rows"].value == 4

    # Each rule's first breaking row: in field_rules' table, and in a rule's own check.
    examples = {
        "OrderPlaced": {
            "currency_in_allowed_values": {"seq": 4, "example": "currency_in_allowed_values: JPY"},
            "amount_in_range": {"seq": 9, "example": "amount_in_range: a|b"},
            "order_id_format": {"seq": 2, "example": "order_id_format: x"},
        },
        # A rule of two event types: each table's check shows its own rows.
        "OrderShipped": {"order_id_format": {"seq": 1, "example": "order_id_format: y"}},
    }
    sampled = field_rules(1.0, rule_examples=examples)
    assert sampled.metadata["rule_examples"].value.splitlines()[2:] == [
        "| currency_in_allowed_values | 4 | currency_in_allowed_values: JPY |",
        "| amount_in_range | 9 | amount_in_range: a\\|b |",
    ]
    result = ContractSilverResult(
        1, 100, 3, 100, {}, NOTHING, failures=failures, checked=CHECKED, rule_examples=examples
    )
    (own,) = (
        r
        for r in _check_results(CHECKS, KEYS, result, 1.0)
        if r.check_name == "order_id_format" and r.asset_key == KEYS["OrderPlaced"]
    )
    assert own.metadata["example"].value == "seq 2: order_id_format: x"


def test_a_run_with_nothing_new_judges_by_what_the_watermark_recorded():
    recorded = Watermark(
        "silver.orders", 100, "run-1", None, {"failures": FAILURES, "checked": CHECKED}
    )
    idle = ContractSilverResult(None, None, 3, 0, {}, NOTHING, watermark=recorded)
    assert verdicts(idle, mostly=0.95) == verdicts(processed(checked=CHECKED), mostly=0.95)

    # Recorded before the rows checked were: any failing row fails, as it did then.
    older = Watermark("silver.orders", 100, "run-1", None, {"failures": FAILURES})
    idle = ContractSilverResult(None, None, 3, 0, {}, NOTHING, watermark=older)
    assert verdicts(idle, mostly=0.95)[("orders", "parseable_json")] == (False, 3, None)


def test_silver_follows_bronze_and_aggregates_follow_silver_unless_automate_is_false():
    aggregate = {
        "table": "gold/daily_orders",
        "event_type": "OrderPlaced",
        "group_by": ["currency"],
        "time": {"column": "occurred_at", "grain": "day"},
        "measures": {"orders": "count"},
    }
    context = ComponentTree.for_test().load_context

    def conditions(**fields) -> dict[str, AutomationCondition | None]:
        declared = JetStreamStream.model_validate({**DECLARED, "aggregates": [aggregate], **fields})
        graph = declared.build_defs(context).resolve_asset_graph()
        return {
            key.to_user_string(): graph.get(key).automation_condition
            for key in graph.get_all_asset_keys()
            if key.path[0] in ("silver", "quarantine", "gold")
        }

    automated = conditions()
    assert automated.pop("gold/daily_orders") == AFTER_UPSTREAM_CHECKS
    assert set(automated) == {"silver/orders_placed", "silver/orders_shipped", "quarantine/orders"}
    assert all(c == AFTER_UPSTREAM_COMMITS for c in automated.values())

    assert set(conditions(automate=False).values()) == {None}


def test_field_rules_carried_over_from_a_batch_before_it_judges_the_rules_that_batch_counted():
    # Recorded before field_rules was counted, and before currency_in_allowed_values existed.
    placed = {k: v for k, v in FAILURES["OrderPlaced"].items() if k != "field_rules"}
    placed = {k: v for k, v in placed.items() if k != "currency_in_allowed_values"}
    recorded = Watermark(
        "silver.orders", 100, "run-1", None,
        {"failures": {**FAILURES, "OrderPlaced": placed | {"amount_in_range": 1}},
         "checked": CHECKED},
    )  # fmt: skip
    idle = ContractSilverResult(None, None, 3, 0, {}, NOTHING, watermark=recorded)

    (found,) = (
        r for r in _check_results(CHECKS, KEYS, idle, 0.95) if r.check_name == "field_rules"
    )

    assert found.passed  # amount_in_range: 1 of 60 rows
    assert "failing_rows" not in found.metadata  # not recorded then: not made up now
    assert (found.metadata["rules"].value, found.metadata["rules_judged"].value) == (2, 1)
    assert found.metadata["carried_over_from_run"].value == "run-1"


def test_schema_valid_tables_the_keywords_that_failed_carried_over_too():
    rule = Rule("schema_valid", "Valid against the schema.", ("OrderPlaced",))
    check = RuleCheck("OrderPlaced", "schema_valid", (rule,))
    failed = {"/properties/x/type": {"rows": 2, "example": '/x: "a|b" is not of type "integer"'}}
    details = {
        "failures": {"OrderPlaced": {"schema_valid": 2}},
        "checked": CHECKED,
        "schema_failures": {"OrderPlaced": failed},
    }
    idle = ContractSilverResult(
        None,
        None,
        3,
        0,
        {},
        NOTHING,
        watermark=Watermark("silver.orders", 9, "run-1", None, details),
    )

    (found,) = _check_results([check], KEYS, idle, 1.0)

    assert not found.passed
    assert found.metadata["schema_failures"].value.splitlines()[2:] == [
        '| `/properties/x/type` | 2 | /x: "a\\|b" is not of type "integer" |'
    ]
