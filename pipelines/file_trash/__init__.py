"""The reference domain: a file trash service's events, on stream FILE_EVENTS."""
