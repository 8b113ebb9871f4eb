"""Where a field read from outside the payload finds its text, as Spark Columns over bronze rows.

`header:<Name>` reads bronze `headers` (map<string,string>, the NATS headers): the exact name,
else the first whose name matches ignoring case. `subject:<index>` reads the 0-based token of
`subject` split on `.`. `cloudevents:<attribute>`, in a binary-mode row (one with a
`ce-specversion` header, column `BINARY` of the checked frame), reads the `ce-<attribute>`
header percent-decoded as the CloudEvents NATS binding writes it (`datacontenttype` falls
back to `Content-Type`); in a structured-mode row it is a payload key, read by
`pipelines.silver.parse`. Null where there is none: the field is missing.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.contract.fields import FieldSource, SourceKind

BINARY = "_binary"  # under the cloudevents preset: whether the row is in binary mode


def header_text(name: str) -> Column:
    """The NATS header `name` of the row (bronze `headers`): the exact name, else the first
    whose name matches ignoring case; null without one."""
    headers = F.col("headers")
    exact = F.try_element_at(headers, F.lit(name))
    same = F.map_values(F.map_filter(headers, lambda key, _: F.lower(key) == name.lower()))
    return F.coalesce(exact, F.try_element_at(same, F.lit(1)))


def subject_token(index: int) -> Column:
    """The 0-based token `index` of the row's subject split on `.`; null past its end."""
    return F.try_element_at(F.split(F.col("subject"), r"\."), F.lit(index + 1))


def _percent_decoded(text: Column) -> Column:
    """A CloudEvents binary-mode header value percent-decoded (`+` stays `+`); as written if
    it is not valid percent-encoding."""
    return F.coalesce(F.try_url_decode(F.regexp_replace(text, r"\+", "%2B")), text)


def cloudevents_header(attribute: str) -> Column:
    """A CloudEvents attribute's binary-mode header, percent-decoded."""
    text = _percent_decoded(header_text(f"ce-{attribute}"))
    return F.coalesce(text, header_text("Content-Type")) if attribute == "datacontenttype" else text


def source_text(source: FieldSource) -> Column:
    """The text a header, subject token or (binary mode) CloudEvents attribute holds."""
    if source.kind is SourceKind.HEADER:
        return header_text(source.name)
    if source.kind is SourceKind.SUBJECT:
        return subject_token(source.index)
    return F.when(F.col(BINARY), cloudevents_header(source.name))
