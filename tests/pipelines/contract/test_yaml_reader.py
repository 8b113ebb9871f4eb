"""The inline YAML form: every type, every constraint, defaults, severities, and its errors."""

import datetime as dt

import pytest

from pipelines.contract import (
    AllowedValues,
    ContractError,
    DerivedColumn,
    Envelope,
    FieldType,
    Format,
    MaxLength,
    NotInFuture,
    Pattern,
    Range,
    Severity,
    StringFormat,
    TimestampEncoding,
    TypeKind,
    UnknownFields,
    contract_from_dict,
    derived_from_dict,
    read_contract,
    read_derived,
)


def one_event(fields: dict, **event) -> dict:
    """A contract dict with an envelope and one event type E holding `fields`."""
    return {
        "envelope": {
            "event_type": "type",
            "event_id": "id",
            "fields": {"id": {"required": True}, "type": {"required": True}},
        },
        "events": {"E": {"fields": fields, **event}},
    }


def field(spec, **event):
    """The field `data.x` declared as `spec`."""
    contract = contract_from_dict(one_event({"data.x": spec}, **event))
    return contract.event_type("E").field("data.x")


def error(data: dict) -> str:
    with pytest.raises(ContractError) as raised:
        contract_from_dict(data, source="c.yaml")
    return str(raised.value)


@pytest.mark.parametrize(
    ("text", "spark_sql"),
    [
        ("string", "string"),
        ("integer", "int"),
        ("long", "bigint"),
        ("double", "double"),
        ("boolean", "boolean"),
        ("date", "date"),
        ("decimal(12,2)", "decimal(12,2)"),
        ("timestamp", "timestamp"),
        ("timestamp(epoch_millis)", "timestamp"),
        ("array<long>", "array<bigint>"),
        ("map<double>", "map<string,double>"),
        ("array<array<string>>", "array<array<string>>"),
    ],
)
def test_every_type_reads_from_its_text(text, spark_sql):
    assert field({"type": text}).type.spark_sql == spark_sql


def test_timestamps_default_to_iso8601_and_name_their_encoding():
    assert field("timestamp").type.encoding is TimestampEncoding.ISO8601
    assert field("timestamp(epoch_seconds)").type == FieldType(
        TypeKind.TIMESTAMP, encoding=TimestampEncoding.EPOCH_SECONDS
    )
    assert str(field("timestamp(epoch_millis)").type) == "timestamp(epoch_millis)"


def test_structs_arrays_of_structs_and_maps_of_structs_hold_nested_fields():
    nested = {"street": "string", "zipCode": {"type": "integer", "required": True}}
    struct = field({"type": "struct", "fields": nested})
    items = field({"type": "array<struct>", "fields": nested})

    assert struct.type.spark_sql == "struct<street:string,zip_code:int>"
    assert items.type.spark_sql == "array<struct<street:string,zip_code:int>>"
    assert field({"fields": nested}).type.kind is TypeKind.STRUCT  # struct by default
    assert struct.type.fields[1].required


def test_a_constraint_on_a_member_of_an_array_of_structs_is_a_rule_on_every_element():
    nested = {"qty": {"type": "integer", "minimum": 1}}
    contract = contract_from_dict(
        one_event({"data.lines": {"type": "array<struct>", "fields": nested}})
    )
    (rule,) = [r for r in contract.rules if r.constraint is not None]

    assert (rule.name, rule.column, rule.path, rule.member) == (
        "lines_each_qty_in_range",
        "lines",
        "data.lines[].qty",
        "qty",
    )
    assert rule.description == "each data.lines[].qty is at least 1."
    assert "inside a map" in error(one_event({"data.m": {"type": "map<struct>", "fields": nested}}))


def test_nullable_is_unset_unless_declared_and_false_when_declared_so():
    assert field("double").nullable is None  # an optional field may be null, as before
    assert field({"type": "double", "nullable": False}).nullable is False
    assert field({"type": "double", "nullable": True}).nullable is True


def test_defaults_string_optional_snake_case_column_silver_table_and_ignore():
    contract = contract_from_dict(one_event({"data.fileSize": None}))
    event = contract.event_type("E")
    f = event.field("data.fileSize")

    assert (f.type, f.required, f.column, f.description) == (
        FieldType(TypeKind.STRING),
        False,
        "file_size",
        None,
    )
    assert event.table == "silver/e"
    assert event.unknown_fields is UnknownFields.IGNORE
    assert contract.envelope == Envelope("type", "id", None)


def test_every_constraint_with_its_default_rule_name_and_description():
    spec = {"minimum": 0, "maximum": 9}
    contract = contract_from_dict(
        one_event(
            {
                "data.n": {"type": "long", **spec},
                "data.code": {"pattern": "^[A-Z]{3}$"},
                "data.kind": {"enum": ["a", "b"]},
                "data.name": {"max_length": 40},
                "data.email": {"format": "email"},
                "data.at": {"type": "timestamp", "not_in_future": "30s"},
                "data.low": {"type": "double", "minimum": 1.5},
            }
        )
    )
    rules = {r.name: r for r in contract.rules if not r.builtin}

    assert {name: (r.constraint, r.description) for name, r in rules.items()} == {
        "n_in_range": (Range(minimum=0, maximum=9), "data.n is between 0 and 9."),
        "code_matches_pattern": (Pattern(regex="^[A-Z]{3}$"), "data.code matches ^[A-Z]{3}$."),
        "kind_in_allowed_values": (AllowedValues(values=("a", "b")), "data.kind is one of a, b."),
        "name_max_length": (MaxLength(length=40), "data.name is at most 40 characters long."),
        "email_is_email": (
            Format(format=StringFormat.EMAIL),
            "data.email is an email address such as name@example.com.",
        ),
        "at_not_in_future": (
            NotInFuture(skew=dt.timedelta(seconds=30)),
            "data.at is not later than the time the stream stored the message plus 30 "
            "seconds of allowed clock skew.",
        ),
        "low_in_range": (Range(minimum=1.5), "data.low is at least 1.5."),
    }
    assert {r.severity for r in rules.values()} == {Severity.QUARANTINE}
    assert all(r.applies_to == ("E",) for r in rules.values())


def test_rule_names_and_severities_are_set_per_field_or_per_constraint_kind():
    one = field({"pattern": "^a$", "rule": "x_is_a", "severity": "block"})
    several = field(
        {
            "max_length": 3,
            "pattern": "^a+$",
            "rules": {"pattern": "only_as", "max_length": {"name": "short", "severity": "warn"}},
        }
    )

    assert one.constraints == (Pattern(regex="^a$", rule="x_is_a", severity=Severity.BLOCK),)
    assert set(several.constraints) == {
        Pattern(regex="^a+$", rule="only_as"),
        MaxLength(length=3, rule="short", severity=Severity.WARN),
    }


def test_builtin_rules_follow_the_envelope():
    without_id = one_event({"data.x": None})
    del without_id["envelope"]["event_id"]
    no_envelope = {"events": {"E": {"subjects": ["e.>"], "fields": {"x": None}}}}

    assert "event_id_unique" not in contract_from_dict(without_id).rule_names
    assert contract_from_dict(no_envelope).rule_names == (
        "parseable_json",
        "required_fields_present",
        "field_types_valid",
    )


def test_derived_columns_keep_their_expression_as_text():
    event = contract_from_dict(
        one_event(
            {"data.at": "timestamp"},
            derived={
                "expires_at": "at + INTERVAL 30 DAYS",
                "day": {"expression": "to_date(at)", "type": "date", "description": "d"},
            },
        )
    ).event_type("E")

    assert event.derived == (
        DerivedColumn("expires_at", "at + INTERVAL 30 DAYS"),
        DerivedColumn("day", "to_date(at)", FieldType(TypeKind.DATE), "d"),
    )


def test_keep_adds_the_unknown_fields_map_column():
    event = contract_from_dict(one_event({"x": None}, unknown_fields="keep")).event_type("E")

    assert event.columns[-1][0] == "unknown_fields"
    assert event.columns[-1][1].spark_sql == "map<string,string>"


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ({"type": "decimel(1,2)"}, "type", "unknown type 'decimel(1,2)'; use string, integer"),
        ({"type": "decimal(40,2)"}, "type", "decimal precision must be 1-38, got 40"),
        ({"type": "decimal(4,5)"}, "type", "decimal scale must be 0-4"),
        ({"type": "decimal"}, "type", "bad decimal 'decimal': write decimal(precision,scale)"),
        ({"type": "timestamp(nanos)"}, "type", "bad timestamp encoding"),
        ({"type": "struct"}, "type", "a struct needs at least one field"),
        ({"type": "long", "fields": {"a": None}}, "type", "fields are declared for type 'long'"),
        ({"pattern": "^(a$"}, "pattern", "invalid regular expression '^(a$'"),
        ({"type": "long", "pattern": "^a$"}, "pattern", "pattern applies to string fields"),
        ({"minimum": 1}, "range", "range applies to decimal, double, integer, long fields"),
        ({"type": "long", "minimum": 5, "maximum": 1}, "maximum", "minimum 5 is greater"),
        ({"type": "long", "enum": ["a"]}, "enum", "enum value 'a' is not a long"),
        ({"enum": []}, "enum", "enum must be a non-empty list"),
        ({"max_length": 0}, "max_length", "max_length must be a positive integer"),
        ({"format": "url"}, "format", "unknown format 'url'; use one of uuid, date-time"),
        ({"not_in_future": "5m"}, "not_in_future", "not_in_future applies to date, timestamp"),
        ({"type": "timestamp", "not_in_future": "soon"}, "not_in_future", "bad duration"),
        ({"pattern": "^a$", "severity": "fatal"}, "severity", "unknown severity 'fatal'"),
        ({"colum": "x"}, "colum", "unknown key 'colum'; allowed keys here: type, column"),
        ({"column": "1x"}, "column", "column name '1x' is not a plain identifier"),
        ({"rule": "r"}, "rule", "`rule` names the rule of a field's only constraint"),
    ],
)
def test_a_bad_field_fails_naming_its_path_and_what_to_do(spec, path, message):
    text = error(one_event({"data.x": spec}))

    assert f"c.yaml: events.E.fields['data.x'].{path}: " in text
    assert message in text


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (lambda d: d.update(evnts={}), "evnts", "unknown key 'evnts'; allowed keys here: envelope"),
        (
            lambda d: d["events"]["E"].update(tabel="t"),
            "events.E.tabel",
            "allowed keys here: table",
        ),
        (
            lambda d: d["events"].update(F={**d["events"]["E"], "table": "silver/e"}),
            "events.F.table",
            "table 'silver/e' is used by event types 'E' and 'F'",
        ),
        (
            lambda d: d["events"]["E"]["fields"].update(y={"column": "X"}),
            "events.E.fields.y.column",
            "fields 'data.x' and 'y' both land in column 'X'",
        ),
        (
            lambda d: d["events"]["E"]["fields"].update(seq="long"),
            "events.E.fields.seq.column",
            "column 'seq' is one silver adds to every table",
        ),
        (
            lambda d: d["events"]["E"].update(derived={"x": "1"}),
            "events.E.derived.x",
            "derived column 'x' has the name of another column",
        ),
        (
            lambda d: d["events"]["E"]["fields"].update(y={"pattern": ".", "rule": "x_in_range"}),
            "events.E.fields.y.pattern",
            "rule name 'x_in_range' is used twice (first: events.E.fields['data.x'].range)",
        ),
        (
            lambda d: d["events"]["E"]["fields"].update(y={"pattern": ".", "rule": "field_rules"}),
            "events.E.fields.y.pattern",
            "rule name 'field_rules' is the check of the rules no one named",
        ),
        (
            lambda d: d["envelope"].update(event_time="at"),
            "envelope.event_time",
            "event type 'E' has no field 'at'",
        ),
        (
            lambda d: d["envelope"]["fields"]["id"].update(required=False),
            "events.E.fields.id.required",
            "the envelope's event_id 'id' must be required",
        ),
        (
            lambda d: d["events"]["E"].update(subjects=["a b"]),
            "events.E.subjects[0]",
            "invalid subject 'a b'",
        ),
        (
            lambda d: d["events"]["E"].update(unknown_fields="drop"),
            "events.E.unknown_fields",
            "unknown_fields is one of keep, ignore, reject",
        ),
    ],
)
def test_a_bad_contract_fails_naming_the_path(change, where, message):
    data = one_event({"data.x": {"type": "long", "minimum": 0}})
    change(data)
    text = error(data)

    assert f"c.yaml: {where}: " in text
    assert message in text


def test_without_a_discriminator_every_event_type_needs_its_own_subjects():
    assert "events.E.subjects: event type 'E' has no subjects" in error(
        {"events": {"E": {"fields": {"x": None}}}}
    )
    same = {"subjects": ["a"], "fields": {"x": None}}
    assert "subject 'a' belongs to both 'E' and 'F'" in error(
        {"events": {"E": same, "F": {**same, "table": "silver/f"}}}
    )


def test_errors_from_a_file_name_the_file_and_the_line(tmp_path):
    path = tmp_path / "orders.yaml"
    path.write_text(
        "events:\n  OrderPlaced:\n    subjects: [orders.placed]\n    fields:\n"
        "      data.amount:\n        type: decimel(12,2)\n"
    )

    with pytest.raises(ContractError) as raised:
        read_contract(path)

    assert str(raised.value).startswith(
        f"{path}:6: events.OrderPlaced.fields['data.amount'].type: unknown type"
    )
    assert raised.value.line == 6
    assert raised.value.path == ("events", "OrderPlaced", "fields", "data.amount", "type")


def test_one_read_reports_every_broken_field_of_every_event_type_with_its_line(tmp_path):
    path = tmp_path / "orders.yaml"
    path.write_text(
        "events:\n  OrderPlaced:\n    subjects: [orders.placed]\n    fields:\n"
        "      data.amount: decimel(12,2)\n      data.qty: {type: long, pattern: '^1'}\n"
        "      data.ok: string\n"
        "  OrderShipped:\n    subjects: [orders.shipped]\n    fields:\n"
        "      data.at: {type: timestmp}\n"
    )

    with pytest.raises(ContractError) as raised:
        read_contract(path)

    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"{path}:5: events.OrderPlaced.fields['data.amount'].type: unknown")
    assert lines[1] == "  and 2 more problem(s):"
    assert lines[2].startswith(f"  - {path}:6: events.OrderPlaced.fields['data.qty'].pattern: ")
    assert lines[3].startswith(f"  - {path}:11: events.OrderShipped.fields['data.at'].type: ")


def test_a_type_a_flow_mapping_splits_at_its_comma_is_told_to_be_quoted(tmp_path):
    path = tmp_path / "orders.yaml"
    head = "events:\n  OrderPlaced:\n    subjects: [orders.placed]\n    fields:\n"
    path.write_text(head + "      data.amount: {type: decimal(12,2), required: true}\n")

    with pytest.raises(ContractError) as raised:
        read_contract(path)

    assert str(raised.value) == (
        f"{path}:5: events.OrderPlaced.fields['data.amount'].type: type 'decimal(12' is cut at "
        "a comma: in a flow mapping ({...}) YAML splits an unquoted type there; quote it: "
        'type: "decimal(12,2)"'
    )
    path.write_text(head + '      data.amount: {type: "decimal(12,2)", required: true}\n')
    assert read_contract(path).event_types[0].fields[0].type.precision == 12


def test_a_key_written_twice_and_invalid_yaml_fail_with_their_line(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text("events:\n  E:\n    fields: {}\n  E:\n    fields: {}\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("events:\n  E: [\n")

    with pytest.raises(ContractError, match=r"twice.yaml:4: events: key 'E' appears twice"):
        read_contract(twice)
    with pytest.raises(ContractError, match=r"broken.yaml:3: not valid YAML"):
        read_contract(broken)
    with pytest.raises(ContractError, match=r"missing.yaml: cannot read the file"):
        read_contract(tmp_path / "missing.yaml")


def test_a_contract_nested_in_a_bigger_document_is_read_at_its_path(tmp_path):
    path = tmp_path / "defs.yaml"
    path.write_text("attributes:\n  contract:\n    events:\n      E:\n        fieldz: {}\n")

    with pytest.raises(ContractError, match=r"defs.yaml:5: attributes.contract.events.E.fieldz"):
        read_contract(path, at=("attributes", "contract"))


def test_the_contract_is_immutable_and_equal_by_value():
    data = one_event({"data.x": "long"})
    contract = contract_from_dict(data)

    assert contract == contract_from_dict(data)
    assert hash(contract.event_type("E").field("data.x").type) == hash(FieldType(TypeKind.LONG))
    with pytest.raises(AttributeError):
        contract.envelope = Envelope()


def test_derived_columns_beside_an_asyncapi_contract_are_read_with_their_lines(tmp_path):
    path = tmp_path / "defs.yaml"
    path.write_text(
        "attributes:\n  derived:\n    OrderPlaced:\n      amount_cents: CAST(amount * 100 AS"
        " BIGINT)\n      label: {expression: upper(currency), type: strng}\n"
    )

    with pytest.raises(ContractError, match=r"defs.yaml:5: attributes.derived.OrderPlaced.label"):
        read_derived(path, at=("attributes", "derived"))

    path.write_text(
        "attributes:\n  derived:\n    OrderPlaced:\n      amount_cents: CAST(amount * 100 AS"
        " BIGINT)\n"
    )
    (cents,) = read_derived(path, at=("attributes", "derived"))["OrderPlaced"]
    assert (cents.name, cents.expression) == ("amount_cents", "CAST(amount * 100 AS BIGINT)")


def test_a_rule_can_quarantine_and_block_and_built_in_rules_can_block_too():
    both = {"severity": "quarantine+block"}
    envelope = {"t": {"required": True}, "id": {"required": True}}
    contract = contract_from_dict(
        {
            "envelope": {"event_type": "t", "event_id": "id", "fields": envelope},
            "events": {"E": {"fields": {"size": {"type": "long", "maximum": 10, **both}}}},
            "severities": {"required_fields_present": "quarantine+block"},
        }
    )

    severities = {rule.name: rule.severity for rule in contract.rules}
    assert severities["size_in_range"] is Severity.QUARANTINE_BLOCK
    assert severities["required_fields_present"] is Severity.QUARANTINE_BLOCK
    assert severities["event_id_unique"] is Severity.QUARANTINE
    assert Severity.QUARANTINE_BLOCK.quarantines and Severity.QUARANTINE_BLOCK.blocks
    assert (Severity.BLOCK.quarantines, Severity.WARN.blocks) == (False, False)


def test_a_built_in_rule_cannot_let_its_rows_stay_in_silver():
    fields = {"t": {"required": True}, "x": None}
    base = {"envelope": {"event_type": "t"}, "events": {"E": {"fields": fields}}}

    with pytest.raises(ContractError, match=r"severities.parseable_json: a built-in rule's row"):
        contract_from_dict({**base, "severities": {"parseable_json": "warn"}})
    with pytest.raises(ContractError, match=r"severities.x_in_range: unknown key"):
        contract_from_dict({**base, "severities": {"x_in_range": "block"}})


def test_derived_columns_from_a_mapping_take_the_long_form_and_name_their_source():
    found = derived_from_dict(
        {"E": {"a": "x + 1", "b": {"expression": "y", "type": "long", "description": "d"}}}
    )
    assert found["E"] == (
        DerivedColumn("a", "x + 1"),
        DerivedColumn("b", "y", FieldType(TypeKind.LONG), "d"),
    )
    with pytest.raises(ContractError, match=r"stream S derived: derived.E.b.type: unknown type"):
        derived_from_dict(
            {"E": {"b": {"expression": "y", "type": "lng"}}}, source="stream S derived"
        )


@pytest.mark.parametrize("key", ["rule", "severity", "rules"])
def test_a_rule_name_or_severity_on_a_field_without_a_constraint_says_to_add_one(key):
    value = {"range": "r"} if key == "rules" else "warn"

    text = error(one_event({"data.x": {"type": "long", key: value}}))

    assert f"c.yaml: events.E.fields['data.x'].{key}: `{key}` names the rule" in text
    assert "add a constraint (minimum, maximum, exclusive_minimum, exclusive_maximum" in text
    assert f"not_in_future) or remove `{key}`" in text
