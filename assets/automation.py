"""Automation conditions shared by the downstream assets (declarative automation).

Bronze is driven by the stream sensors (`sensors/stream.py`); everything after it follows
on its own: an asset runs when an upstream asset was updated, but never over a failed
blocking quality check upstream.
"""

from dagster import AutomationCondition

EAGER_AFTER_CHECKS = (
    AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed()
).with_label("eager, once upstream blocking checks passed")
