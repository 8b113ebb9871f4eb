"""The core every feature module stands on: the session, its loop, retries and checks.

- `session`: `Session`, one nats-py connection on a private event loop; `run` executes a
  coroutine there and translates errors, `api_request` speaks the JetStream API.
- `runtime`: the event loop thread. `retry`: retries through a cluster's leader elections.
- `messages`: the values JetStream hands back (`PubAck`, `JsMessage`).
- `validation`: name, subject, sequence and time checks that run before any I/O.
- `spec_merge`: how a declared spec meets what the server has (settings it does not model
  are kept, never dropped).

Nothing here imports a feature subpackage; the errors live one level up, in
`resources.jetstream.errors`, because callers catch them.
"""
