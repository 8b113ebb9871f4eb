"""Dagster wiring: what turns streams, ingests and stages into assets, checks, jobs and sensors.

`streams` (the stream factory: a stream's bronze assets, checks, sensors and jobs),
`jobs` (ingest jobs), `generate_job`, `rejudge_job`, `maintenance` (OPTIMIZE and VACUUM of
every declared table), `schedules`, `default_resources` (the resources a code location gets
when it declares none). The code location itself is `pipelines/definitions.py`; the
`JetStreamStream` component is `pipelines/components/`.
"""
