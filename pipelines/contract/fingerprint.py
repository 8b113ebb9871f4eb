"""Which contract judged a row: a short, stable fingerprint of a declaration.

Every silver row records the fingerprint of its event type's declaration (with the envelope
and the built-in rules' severities, which judge it too), and every quarantine row the
fingerprint of the whole contract, in the column `contract_version`; the user's own version
string (`Contract.version`: AsyncAPI `info.version`, a JSON Schema's `$id`, a YAML contract's
`version`) goes in front when the document has one: `1.4.0+3f9a0c1b2d4e`.

The fingerprint is the first 12 hex digits of the SHA-256 of the declaration's `repr`, which
the frozen dataclasses of `pipelines.contract` write out in full and in declaration order:
the same declaration gives the same fingerprint in every process, and any change to it (a
field, a type, a constraint, a description, a derived expression) gives another.
"""

from __future__ import annotations

import hashlib

from pipelines.contract.model import Contract, EventType

_DIGITS = 12


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:_DIGITS]


def _versioned(contract: Contract, fingerprint: str) -> str:
    return f"{contract.version}+{fingerprint}" if contract.version else fingerprint


def event_type_version(contract: Contract, event: EventType) -> str:
    """The `contract_version` of the event type's silver rows: the user's version, if any,
    and the fingerprint of the event type's declaration, the envelope and the built-in
    rules' severities."""
    severities = sorted(contract.builtin_severities.items())
    return _versioned(contract, _digest(contract.envelope, severities, event))


def contract_version(contract: Contract) -> str:
    """The `contract_version` of quarantine rows: the user's version, if any, and the
    fingerprint of the whole contract (a quarantined row may be of no declared type)."""
    severities = sorted(contract.builtin_severities.items())
    return _versioned(contract, _digest(contract.envelope, severities, contract.event_types))
