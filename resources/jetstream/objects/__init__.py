"""Object Store buckets: `ObjectStoreSpec` (spec), `ObjectStoreBucket` (bucket) and its parts.

`bucket` puts the API together from `puts` (writing), `gets` (reading, following links) and
`watch`; `stream` is the bucket's stream underneath, `meta` the object metas and links,
`transfer` the chunked upload and download (ADR-20), `guard` the missing-bucket errors.
"""
