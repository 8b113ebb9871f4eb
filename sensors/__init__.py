"""Sensors that start runs when streams advance (built by factories, one per ingest)."""
