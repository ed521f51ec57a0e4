"""``{{ warning|summary }}`` and ``{{ event|summary }}``: a warning's summary (or what the rules saw at one of its
events) worded from its figures in the reader's language and time zone (``portal.services.warnings.summaries``)."""

from django import template

from portal.models.warnings import WarningEvent
from portal.services.warnings import summaries

register = template.Library()


@register.filter
def summary(warning_or_event) -> str:
    if isinstance(warning_or_event, WarningEvent):
        return summaries.of_event(warning_or_event)
    return summaries.of_warning(warning_or_event)
