"""Reading samples back as time-aligned series (a missing slot is None, so charts draw it as a gap)."""
