"""The Dagster code location: definitions, jobs, the ingest engine, pure Spark transforms."""
