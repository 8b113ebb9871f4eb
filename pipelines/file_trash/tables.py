"""The file trash lakehouse's Delta tables, by name (relative to the lakehouse root).

- `bronze/file_events`: the bronze ingest, exactly once; key (stream, seq).
- `audit/audit_log`: the audit-logger ingest (fan-out); key (stream, seq).
- `bronze/trash_notifications`: the notification-service ingest (`files.trashed` only).
- `silver/file_deleted`, `silver/file_trashed`: valid events by type; key (stream, seq),
  one row per eventId.
- `silver/quarantine`: every rejected bronze row, payload kept, with the rules it broke;
  key (stream, seq).
- `gold/daily_trash_by_user` (day, user_id), `gold/daily_trash_by_mime_type`
  (day, mime_type), `gold/expiring_files` (file_id): recomputed from silver.
"""

from __future__ import annotations

SILVER_FILE_DELETED = "silver/file_deleted"
SILVER_FILE_TRASHED = "silver/file_trashed"
SILVER_QUARANTINE = "silver/quarantine"
GOLD_DAILY_BY_USER = "gold/daily_trash_by_user"
GOLD_DAILY_BY_MIME_TYPE = "gold/daily_trash_by_mime_type"
GOLD_EXPIRING_FILES = "gold/expiring_files"

SILVER_TABLES = (SILVER_FILE_DELETED, SILVER_FILE_TRASHED, SILVER_QUARANTINE)
GOLD_TABLES = (GOLD_DAILY_BY_USER, GOLD_DAILY_BY_MIME_TYPE, GOLD_EXPIRING_FILES)
