"""The lakehouse's generic stages, for any stream and any contract; no Dagster here.

`delta_tables` (Delta writes, merges, maintenance statements), `delta_log` (a table's schema,
properties and version read from its log without Spark), `watermarks` (a stage's position in
KV), `refresh` (change-data refresh of derived tables), `aggregates` (declared gold
aggregates), `artifacts/` (run artifacts in the JetStream Object Store).
"""
