"""Ingestion from JetStream durable consumers into bronze Delta tables."""
