"""Consumers: declared specs, management, and the three ways to read.

- `spec`: `ConsumerSpec`, `AckPolicy`, `DeliverPolicy`; `state`: `ConsumerState`.
- `manage`: `Consumers`, what `client.consumers` is (add, info, update, delete), with
  `control` (pause, resume, reset) as its base.
- `pull` and `pull_requests`: fetching from durable pull consumers.
- `push`: `PushSubscription` on durable push consumers (and deliver groups).
- `ordered`: ephemeral ordered consumers, exact sequence ranges.
"""
