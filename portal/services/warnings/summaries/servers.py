"""What server warnings say: a host's CPU, memory, disks, load or TCP connections past their thresholds, and what
that does to the brokers on it."""

from __future__ import annotations

from django.utils.translation import gettext as _

from portal.services.warnings.summaries.words import count, duration, full_stop, join_sentences, listing, size


def _on_host(host: str, text: str) -> str:
    return _("%(host)s: %(text)s") % {"host": host, "text": text}


def server_cpu(host: str, details: dict) -> str:
    readings = details["cpu_percent"]
    text = _("CPU %(percent)s%% busy") % {"percent": f"{readings[0]:.0f}"}
    if details["cpu_iowait_percent"]:
        text += _(" (%(percent)s%% waiting for I/O)") % {"percent": f"{details['cpu_iowait_percent']:.0f}"}
    text += _(", over %(threshold)s%% in the last %(readings)s readings (%(duration)s)") % {
        "threshold": f"{details['threshold_percent']:g}",
        "readings": len(readings),
        "duration": duration(details["span_seconds"]),
    }
    if details["load1"] is not None:
        text += _("; load %(load)s") % {"load": f"{details['load1']:.2f}"}
    text += full_stop()
    consequence = _("Busy CPUs slow every send and pull the brokers on this host answer.")
    return _on_host(host, join_sentences(text, consequence))


def server_memory(host: str, details: dict) -> str:
    text = _("memory %(percent)s%% used (%(used)s of %(total)s)") % {
        "percent": f"{details['used_percent']:.0f}",
        "used": size(details["mem_used"]),
        "total": size(details["mem_total"]),
    }
    if details["swap_used"]:
        text += _(", %(swap)s swapped out") % {"swap": size(details["swap_used"])}
    text += full_stop()
    consequence = _(
        "The brokers' page cache (the recent messages consumers read) shrinks, and pulls go to disk or to the slave."
    )
    return _on_host(host, join_sentences(text, consequence))


def server_disk(host: str, details: dict) -> str:
    mounts = sorted(details["mounts"].items(), key=lambda item: (-item[1]["used_percent"], item[0]))
    named = [
        _("%(mount)s %(percent)s%% used (%(free)s free)")
        % {"mount": mount, "percent": f"{figures['used_percent']:.0f}", "free": size(figures["available"])}
        for mount, figures in mounts
    ]
    consequence = _(
        "A broker deletes old commit-log files early past 75% (diskMaxUsedSpaceRatio) and refuses new messages past "
        "90% (diskSpaceWarningLevelRatio)."
    )
    return _on_host(host, join_sentences(listing(named) + full_stop(), consequence))


def server_load(host: str, details: dict) -> str:
    text = _("load average %(load1)s (5 min %(load5)s, 15 min %(load15)s), at or over %(threshold)s") % {
        "load1": f"{details['load1']:.2f}",
        "load5": f"{details['load5'] or 0:.2f}",
        "load15": f"{details['load15'] or 0:.2f}",
        "threshold": f"{details['threshold']:g}",
    }
    if details["cpu_percent"] is not None:
        text += _("; CPU %(percent)s%% busy") % {"percent": f"{details['cpu_percent']:.0f}"}
    text += full_stop()
    return _on_host(host, join_sentences(text, _("Processes wait for CPU or disk: broker requests queue up.")))


def server_tcp(host: str, details: dict) -> str:
    text = _("%(established)s established TCP connections (threshold %(threshold)s)") % {
        "established": count(details["established"]),
        "threshold": count(details["threshold"]),
    }
    if details["time_wait"] is not None:
        text += _(", %(sockets)s in TIME_WAIT") % {"sockets": count(details["time_wait"])}
    if details["total"] is not None:
        text += _(", %(sockets)s sockets in all") % {"sockets": count(details["total"])}
    text += full_stop()
    return _on_host(host, join_sentences(text, _("Clients may be reconnecting in a loop or leaking connections.")))
