"""Subcommands of the `jsl` CLI, one module each."""
