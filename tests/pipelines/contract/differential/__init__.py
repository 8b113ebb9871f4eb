"""The differential tests' parts: models, messages, judges and known differences."""
