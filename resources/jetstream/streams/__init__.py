"""Streams: declared specs, management, stored messages.

- `spec`: `StreamSpec` and the enums (every stream kind the server accepts).
- `state`: `StreamState`, a stream's config and counters as read back.
- `source`: `StreamSource`, a mirror's or a source's origin.
- `manage`: `Streams`, what `client.streams` is (add, info, update, list, delete).
- `stored`: reading, deleting and purging stored messages (a base of `Streams`).
- `buckets`: the stream behind a KV or Object Store bucket (replicas, metadata).
"""
