"""Publishing to JetStream: one message with expectations, or a batch with bounded acks in flight.

- `expectations`: `Expectations` (the `Nats-Expected-*` headers) and the outbound headers.
- `send`: `publish` and `publish_batch`, with retries through a stream's leader election.

Each publish is a request to the subject; the stream that captures it answers with a
`PubAck` or an API error.
"""
