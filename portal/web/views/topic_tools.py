"""A topic's message tools: send a test message (the owning team and portal admins; the result links to the
message's page) and export a time range of it as JSON lines or CSV, streamed as it is read from the brokers."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from portal import access
from portal.inputs import EXPORT_CONTENT_TYPES
from portal.models import Topic
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages import inspection
from portal.web.entries import visible_entry
from portal.web.forms import submitted
from portal.web.message_forms import ExportForm, TestMessageForm


@login_required
def send_test_message(request, pk):
    topic = visible_entry(Topic, request.user, pk)
    if not access.can_change(request.user, topic):
        raise PermissionDenied
    form = TestMessageForm(submitted(request))
    result, error = None, ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = inspection.send_test_message(
                request.user, topic, data["body"].encode(), tags=data["tags"], keys=data["keys"].split()
            )
        except ValidationError as failure:
            form.show_errors(failure)
        except ClusterOperationError as failure:
            error = str(failure)
    return render(
        request, "portal/messages/send.html", {"topic": topic, "form": form, "result": result, "error": error}
    )


@login_required
@require_safe
def export_messages(request, pk):
    """The form (GET without a range), else the download: one line per message, written while the brokers are
    read, so a long range starts downloading at once and is never held whole in memory."""
    topic = visible_entry(Topic, request.user, pk)
    form = ExportForm(request.GET if "begin" in request.GET else None)
    if not form.is_valid():
        return render(request, "portal/messages/export.html", {"topic": topic, "form": form})
    data = form.cleaned_data
    try:
        lines = inspection.export_messages(request.user, topic, data["begin"], data["end"], data["output"])
    except ValidationError as failure:
        form.show_errors(failure)
        return render(request, "portal/messages/export.html", {"topic": topic, "form": form}, status=400)
    response = StreamingHttpResponse(lines, content_type=EXPORT_CONTENT_TYPES[data["output"]])
    filename = f"{topic.name}-{data['begin']:%Y%m%dT%H%M%S}-{data['end']:%Y%m%dT%H%M%S}.{data['output']}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
