"""Re-export of :mod:`terminai_apts.model` (same objects)."""

from terminai_apts.model import (
    PLAN_SCHEMA_VERSION,
    CleanupEntry,
    CleanupPlan,
    CleanupPolicy,
    ObjectTableLabels,
)

__all__ = ["PLAN_SCHEMA_VERSION", "CleanupEntry", "CleanupPlan", "CleanupPolicy", "ObjectTableLabels"]
