"""Errors of the object store's tools: the S3 server's binary, its build, its start-up."""

from __future__ import annotations


class ObjectStoreError(Exception):
    """Root of every error raised by `resources.object_store`."""


class S3ServerError(ObjectStoreError):
    """The embedded S3 server (SeaweedFS) could not be found, built or started."""
