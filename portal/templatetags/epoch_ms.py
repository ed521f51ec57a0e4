"""``{{ millis|epoch_ms|date:"..." }}``: a broker's or a client's epoch milliseconds (trace times, store times) as
an aware datetime, which the ``date`` filter then shows in the reader's time zone."""

import datetime as dt

from django import template

register = template.Library()


@register.filter
def epoch_ms(millis):
    """None (and anything that is not a number) stays None, so ``default`` can show a dash."""
    if isinstance(millis, bool) or not isinstance(millis, int):
        return None
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC)
