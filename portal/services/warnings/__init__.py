"""Warnings (issue 8): thresholds of the rules (``thresholds``), the lifecycle (``lifecycle.reconcile`` and
``acknowledge``), who hears (``recipients``), users' choices (``subscriptions``), channels and their transports
(``channels``), what is said (``messages``) and delivery (``delivery``). The rules themselves are in
``portal/services/warnings/rules``. Modules are imported by name; this package imports nothing, so the rules can import
the thresholds without pulling in the lifecycle."""
