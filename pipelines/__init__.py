"""The Dagster code location and the lakehouse it runs, in layers (lowest first):

    settings.py     where state lives (data directory, Spark, NATS); read by every layer
    lakehouse/      generic stages, no Dagster: Delta writes and the Delta log, watermarks in
                    KV, change-data refresh, aggregates, run artifacts in the Object Store
    contract/       the engines: an event contract read from YAML, JSON Schema or AsyncAPI;
    ingest/           exactly-once JetStream -> bronze; bronze -> validated silver and
    silver/           quarantine, schema evolution, rejudging
    file_trash/     the domain: the file trash's events, gold tables and topology
    wiring/         Dagster wiring: the stream factory (assets, checks, sensors per ingest),
                    jobs, schedules, maintenance, default resources
    components/     the `JetStreamStream` Dagster Component that `defs.yaml` files name
    definitions.py  the code location Dagster loads (`defs/` holds its component instances)
    cli/            operator tools: `jsl` and its commands, the demo, status, provisioning,
                    supervision of `jsl dev`, the AsyncAPI generator

A module imports only its own layer and the layers listed above it here, plus `resources`;
`assets` and `sensors` are imported from `wiring/`, `components/`, `definitions.py` and
`cli/` only. `tests/test_import_graph.py` holds the tree to that.
"""
