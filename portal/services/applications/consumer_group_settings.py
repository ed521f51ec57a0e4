"""Consumer-group setting applications: pause and resume a group on the brokers (its subscription group's
``consumeEnable``: a paused group's clients pull nothing) and change its broker-side settings.

Both write the subscription group on every master (read, change, write: what is not asked for stays), so the same
approval run again writes the same thing. Slaves copy their masters' tables by themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.utils.translation import gettext_lazy as _

from monitor.messages import groups as wire_groups
from monitor.remoting.admin import MQAdmin
from portal.models import Application
from portal.services.applications.checks import Errors, reject_unknown_keys
from portal.services.applications.operation_checks import record_operation
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages.wire import cluster_admin

# The settings a GROUP_SETTINGS application may change: (lowest, highest) for numbers, None for yes/no.
SETTINGS = {
    "retry_queue_nums": (0, 64),
    "retry_max_times": (-1, 64),
    "consume_broadcast_enable": None,
    "which_broker_when_consume_slowly": (0, 64),
    "broker_id": (0, 64),
}


def clean_settings(application: Application, payload: dict) -> dict:
    """The changed settings only; at least one."""
    errors = Errors()
    reject_unknown_keys(payload, set(SETTINGS), errors)
    cleaned = {}
    for name, bounds in SETTINGS.items():
        if payload.get(name) is None:
            continue
        value = payload[name]
        if bounds is None:
            if not isinstance(value, bool):
                errors.add(name, _("Say true or false."))
                continue
        elif isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
            errors.add(
                name, _("Enter a whole number from %(low)d to %(high)d.") % {"low": bounds[0], "high": bounds[1]}
            )
            continue
        cleaned[name] = value
    if not cleaned and not errors.errors:
        errors.add("__all__", _("Change at least one setting."))
    errors.raise_if_any()
    return cleaned


@contextmanager
def _group_on_cluster(application: Application, what) -> Iterator[MQAdmin]:
    """The wire client, with "no master knows the group" (the ops' LookupError) as a cluster error."""
    with cluster_admin(application.cluster, what) as admin:
        try:
            yield admin
        except LookupError as exc:
            raise ClusterOperationError(f"{what}: {exc}") from exc


def _set_enabled(application: Application, payload: dict, enabled: bool) -> None:
    what = _("Resuming the consumer group") if enabled else _("Pausing the consumer group")
    with _group_on_cluster(application, what) as admin:
        wire_groups.set_consume_enabled(admin, application.consumer_group.name, enabled)
    payload["outcome"] = {"consume_enable": enabled}


def act_pause(application: Application, payload: dict) -> None:
    _set_enabled(application, payload, False)


def act_resume(application: Application, payload: dict) -> None:
    _set_enabled(application, payload, True)


def act_settings(application: Application, payload: dict) -> None:
    changes = {name: value for name, value in payload.items() if name in SETTINGS}
    with _group_on_cluster(application, _("Changing the consumer group's settings")) as admin:
        config = wire_groups.update_group_settings(admin, application.consumer_group.name, **changes)
    payload["outcome"] = {"settings": {name: getattr(config, name) for name in SETTINGS}}


record_pause = record_operation("consumergroup.paused")
record_resume = record_operation("consumergroup.resumed")
record_settings = record_operation("consumergroup.settings_changed")
