"""Key-Value buckets: `KeyValueSpec` (spec), `KeyValueBucket` (bucket) and its parts.

`bucket` is the synchronous API, on `stream` (`KvStream`: the bucket's stream and how each
call runs, with retries); `entries` the values it returns, `checks` the argument
checks, `guard` the translation of a missing bucket or a lost compare-and-set, `watch` the
watcher. The bucket is the stream `KV_<bucket>` (see `streams.buckets`).
"""
