"""Reaching a NATS server: settings, credentials, TLS, and the errors of connecting.

- `settings`: `ConnectionSettings` (servers, auth, TLS, timeouts, API prefix or domain).
- `credentials`: checks of credential files and the TLS context.
- `connect`: `open_connection`, the nats-py connect with the project's callbacks.
- `failures`: what a failed connect means (unreachable, refused credentials, TLS).

The `NATS_*` environment variables the resource reads are one level up, in
`resources/jetstream/environment.py`, next to the Dagster resource that uses them.
"""
