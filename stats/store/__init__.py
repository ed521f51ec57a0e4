"""Writing samples: one module per kind, each an idempotent upsert keyed by (entity..., minute)."""
