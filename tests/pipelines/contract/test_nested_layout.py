"""Columns by structure: a nested object is one struct column unless someone flattens it
(`x-jsl-flatten`, `Layout(NestedObjects.FLATTEN)`), and an existing table keeps the layout
it was written with (`Layout.written`)."""

import pytest

from pipelines.contract import (
    ContractError,
    Envelope,
    Layout,
    NestedObjects,
    TypeKind,
    WrittenTable,
    contract_from_json_schemas,
)

ENVELOPE = Envelope(event_type="eventType", event_id="eventId")
COMMIT = {
    "type": "object",
    "required": ["id", "author"],
    "properties": {
        "id": {"type": "string"},
        "author": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 40}, "email": {}},
        },
        "committer": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


def schema(**props) -> dict:
    return {
        "type": "object",
        "required": ["eventId", "eventType"],
        "properties": {
            "eventId": {"type": "string"},
            "eventType": {"const": "Push"},
            **props,
        },
    }


def read(root: dict, layout: Layout | None = None, **options):
    contract = contract_from_json_schemas(
        {"push": root},
        envelope=options.pop("envelope", ENVELOPE),
        layout=layout or Layout(),
        **options,
    )
    return contract.event_type("Push")


def columns(event) -> list[str]:
    return [f.column for f in event.fields]


def test_a_nested_object_is_one_struct_column_with_its_members_nested():
    event = read(schema(head_commit=COMMIT))
    commit = event.field("head_commit")

    assert columns(event) == ["event_id", "event_type", "head_commit"]
    assert commit.type.kind is TypeKind.STRUCT
    members = {f.path: (f.column, f.type.kind, f.required) for f in commit.type.fields}
    assert members == {
        "id": ("id", TypeKind.STRING, True),
        "author": ("author", TypeKind.STRUCT, True),
        "committer": ("committer", TypeKind.STRUCT, False),
    }
    # Keys that the flattened layout had to name by their whole path need nothing here.
    author = commit.type.fields[1]
    assert [f.column for f in author.type.fields] == ["name", "email"]
    contract = contract_from_json_schemas({"push": schema(head_commit=COMMIT)}, envelope=ENVELOPE)
    names = [r.name for r in contract.rules if not r.builtin]
    assert names == ["head_commit_author_name_max_length"]


def test_flattening_is_asked_for_by_x_jsl_flatten_or_the_layout():
    flat_commit = {**COMMIT, "x-jsl-flatten": True}
    event = read(schema(head_commit=flat_commit))

    # One level: its members are columns, an object among them is a struct column.
    assert columns(event) == ["event_id", "event_type", "id", "author", "committer"]
    struct_commit = {**COMMIT, "x-jsl-flatten": False}
    flat = read(schema(head_commit=struct_commit, n=COMMIT), Layout(NestedObjects.FLATTEN))
    assert columns(flat)[:3] == ["event_id", "event_type", "head_commit"]
    assert "n__author__name" in columns(flat)


def test_an_object_holding_the_envelope_is_flattened_so_the_envelope_is_columns():
    root = {
        "type": "object",
        "required": ["meta"],
        "properties": {
            "meta": {
                "type": "object",
                "required": ["id", "type"],
                "properties": {"id": {"type": "string"}, "type": {"const": "Push"}},
            },
            "data": COMMIT,
        },
    }
    envelope = Envelope(event_type="meta.type", event_id="meta.id")
    event = read(root, envelope=envelope)

    assert [(f.path, f.type.kind) for f in event.fields] == [
        ("meta.id", TypeKind.STRING),
        ("meta.type", TypeKind.STRING),
        ("data", TypeKind.STRUCT),
    ]


def test_a_table_keeps_the_layout_it_was_written_with():
    def written(recorded):
        return Layout(
            written=lambda table: WrittenTable(recorded[table]) if table in recorded else None
        )

    flat_table = {"silver/push": {"eventId": "event_id", "head_commit.id": "id"}}
    struct_table = {"silver/push": {"eventId": "event_id", "head_commit": "head_commit"}}
    root = schema(head_commit=COMMIT, repo={"type": "object", "properties": {"id": {}}})

    # Written flattened: its objects stay flattened, and a new object (repo) flattens too.
    assert "head_commit" not in columns(read(root, written(flat_table)))
    assert "repo__id" in columns(read(root, written(flat_table)))
    # Written with structs: structs; a table that records no columns was written flattened.
    assert columns(read(root, written(struct_table)))[2:] == ["head_commit", "repo"]
    assert "head_commit" not in columns(read(root, written({"silver/push": {}})))
    # No table yet: structs. The explicit setting wins over the table.
    assert columns(read(root, written({})))[2:] == ["head_commit", "repo"]
    explicit = Layout(NestedObjects.STRUCT, written=lambda table: WrittenTable(flat_table[table]))
    assert columns(read(root, explicit))[2:] == ["head_commit", "repo"]


def test_member_keys_map_to_distinct_column_names():
    reactions = {
        "type": "object",
        "properties": {
            "+1": {"type": "integer"},
            "-1": {"type": "integer"},
            "ID": {"type": "string"},
            "id": {"type": "string"},
            "GitHub": {"type": "string"},
        },
    }
    members = read(schema(reactions=reactions)).field("reactions").type.fields
    names = [f.column for f in members]

    assert names[:2] == ["x2b_1", "x2d_1"]
    assert names[4] == "git_hub"
    # ID and id would be one column (Spark and Delta ignore case): each gets its checksum.
    assert names[2] != names[3] and {n[:3] for n in names[2:4]} == {"id_"}
    assert len({n.lower() for n in names}) == len(names)
    assert names == [f.column for f in read(schema(reactions=reactions)).fields[2].type.fields]


def test_an_object_with_no_properties_is_a_map_and_its_counts_are_the_validators():
    event = read(
        schema(
            labels={"type": "object", "properties": {}},
            sized={"type": "object", "properties": {"a": {}}, "minProperties": 1},
        )
    )

    assert event.field("labels").type.kind is TypeKind.MAP
    assert event.field("sized").type.kind is TypeKind.STRUCT
    assert "/properties/sized/minProperties" in event.schema_check.delegated


def test_a_bad_x_jsl_flatten_names_its_place():
    with pytest.raises(ContractError) as raised:
        read(schema(head_commit={**COMMIT, "x-jsl-flatten": "yes"}))

    assert "#/properties/head_commit/x-jsl-flatten: x-jsl-flatten is true" in str(raised.value)


def test_a_union_is_a_variant_but_a_column_written_as_json_text_stays_json_text():
    ref = {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]}
    root = schema(ref=ref, extra={}, tags={"type": "array"}, raw={**ref, "x-jsl-type": "json"})
    kinds = {f.column: str(f.type) for f in read(root).fields}

    assert (kinds["ref"], kinds["extra"], kinds["tags"]) == ("variant", "variant", "array<variant>")
    assert kinds["raw"] == "json"  # asked for
    old = WrittenTable({"eventId": "event_id", "ref": "ref"}, frozenset({"event_id", "ref"}))
    kinds = {f.column: str(f.type) for f in read(root, Layout(written=lambda table: old)).fields}
    assert (kinds["ref"], kinds["extra"]) == ("json", "variant")  # as written / new
