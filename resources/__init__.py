"""Dagster resources: JetStream, Spark with Delta, and (later) data quality."""
