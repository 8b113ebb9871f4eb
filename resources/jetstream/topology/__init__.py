"""Topology as code: what the pipeline declares, and what it needs to be allowed.

- `plan`: `Topology`, `plan` and `reconcile` (create what is missing, change only what is
  declared, never scale a stream down unless asked).
- `permissions`: the NATS permissions a topology's users need.

`plan` works on the `JetStreamClient` facade (its streams and consumers); `permissions`
only reads the declared specs.
"""
