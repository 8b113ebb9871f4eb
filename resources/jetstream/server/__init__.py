"""nats-server processes the project starts itself: for tests, the demo and `make dev`.

- `embedded`: `EmbeddedNatsServer`, one nats-server with JetStream on a free port.
- `cluster`: three of them as a cluster (R3 streams, node loss).
"""
