"""Operator tools: the `jsl` command (`main`) and its subcommands (`commands/`), the demo,
`jsl status`, provisioning, the supervision of `jsl dev`, the AsyncAPI generator.

`python -m pipelines.cli ...` is `jsl ...`.
"""
