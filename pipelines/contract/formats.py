"""The string formats a `Format` constraint checks, and the regular expressions that check them.

    uuid           8-4-4-4-12 hexadecimal digits, any case (no braces, no urn:uuid:)
    date-time      an RFC 3339 date-time with a zone (checked by parsing, see rule_columns)
    date           an RFC 3339 full-date, yyyy-MM-dd, a real calendar day
    time           an RFC 3339 time, hh:mm:ss with optional fraction and optional zone
    duration       an ISO 8601 duration such as P1DT2H, PT0.5S or P2W (optional leading -)
    email          something@domain.tld, no spaces and one @
    uri            an absolute URI: scheme ":" then RFC 3986 characters or %XX escapes
    uri-reference  a URI or a relative reference (the same characters, no scheme needed)
    hostname       RFC 1123: dot-separated labels of 1-63 letters, digits and inner hyphens,
                   at most 253 characters
    ipv4           four decimal numbers 0-255 without leading zeros (Python's ipaddress)
    ipv6           RFC 4291 text forms, :: compression and an IPv4 tail; no %zone
    byte           standard base64 (RFC 4648 alphabet + /, padded to a multiple of 4)

The expressions are Java regular expressions (Spark's `rlike`), anchored with `^` and `\\z`,
ASCII only (`\\d` is [0-9]). They follow what the `jsonschema` package's format checker and
pydantic accept, with the differences docs/contract.md lists (a `time` without a zone is
accepted as pydantic writes it; `jsonschema` wants one).
"""

from __future__ import annotations

from resources.backports import StrEnum


class StringFormat(StrEnum):
    """The string formats a `Format` constraint checks."""

    UUID = "uuid"
    DATE_TIME = "date-time"
    DATE = "date"
    TIME = "time"
    DURATION = "duration"
    EMAIL = "email"
    URI = "uri"
    URI_REFERENCE = "uri-reference"
    HOSTNAME = "hostname"
    IPV4 = "ipv4"
    IPV6 = "ipv6"
    BYTE = "byte"


FORMAT_TEXT = {
    StringFormat.UUID: "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
    StringFormat.DATE_TIME: "an ISO-8601 date-time with a zone, such as 2026-11-21T10:00:00Z",
    StringFormat.DATE: "a calendar date written yyyy-MM-dd, such as 2026-11-21",
    StringFormat.TIME: "a time of day such as 10:00:00, 10:00:00.5 or 10:00:00+01:00",
    StringFormat.DURATION: "an ISO-8601 duration such as P1DT2H30M or PT0.5S",
    StringFormat.EMAIL: "an email address such as name@example.com",
    StringFormat.URI: "an absolute URI such as https://example.com/a?b=c",
    StringFormat.URI_REFERENCE: "a URI or a relative reference such as ../a/b?c",
    StringFormat.HOSTNAME: "a host name such as api.example.com",
    StringFormat.IPV4: "an IPv4 address such as 192.0.2.1",
    StringFormat.IPV6: "an IPv6 address such as 2001:db8::1",
    StringFormat.BYTE: "base64 text such as aGVsbG8=",
}

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)
_URI_CHAR = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NUMBER = r"[0-9]+(?:[.,][0-9]+)?"

# Java regular expressions for Spark's `rlike`; date-time is parsed instead (see rule_columns).
FORMAT_REGEX = {
    StringFormat.UUID: r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\z",
    StringFormat.EMAIL: r"^[^@\s]+@[^@\s]+\.[^@\s.]+\z",
    StringFormat.DATE: r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\z",
    StringFormat.TIME: (
        r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?"
        r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?\z"
    ),
    StringFormat.DURATION: (
        rf"^-?P(?=[0-9]|T[0-9])(?:{_NUMBER}Y)?(?:{_NUMBER}M)?(?:{_NUMBER}W)?(?:{_NUMBER}D)?"
        rf"(?:T(?=[0-9])(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}S)?)?\z"
    ),
    StringFormat.URI: rf"^[A-Za-z][A-Za-z0-9+.\-]*:{_URI_CHAR}*\z",
    StringFormat.URI_REFERENCE: rf"^{_URI_CHAR}*\z",
    StringFormat.HOSTNAME: rf"^(?=.{{1,253}}\z){_LABEL}(?:\.{_LABEL})*\z",
    StringFormat.IPV4: rf"^{_IPV4}\z",
    StringFormat.IPV6: rf"^{_IPV6}\z",
    StringFormat.BYTE: r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z",
}
