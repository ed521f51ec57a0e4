"""The one command run on a broker host for server stats, and the parser of its output.

The command is a constant: nothing about a host, a cluster or a user goes into it, so it can be reviewed once and
even pinned in the collector key's ``authorized_keys`` entry (``restrict,command="..."``). It reads the kernel's
own counters (``/proc``, ``/sys``, ``df``), which every Linux host has, so nothing is installed on the servers (MQCloud
copies nmon onto each host instead). It needs a POSIX shell and GNU coreutils, and no privileges.

Rates (CPU, disk I/O, network) come from two readings of the counters taken one second apart in the same session,
divided by the time the host's own uptime clock says passed: every collection is self-contained, so a missed or
repeated run never produces a rate spanning an unknown interval.
"""

from __future__ import annotations

from collections.abc import Callable

from stats.store.servers import DiskUse, ServerStats

_COUNTERS = (
    "echo '@@ uptime {n}'; cat /proc/uptime; "
    "echo '@@ cpu {n}'; head -n 1 /proc/stat; "
    "echo '@@ diskstats {n}'; cat /proc/diskstats; "
    "echo '@@ netdev {n}'; cat /proc/net/dev; "
)

SERVER_COMMAND = (
    "export LC_ALL=C; "
    + _COUNTERS.format(n=1)
    + "sleep 1; "
    + _COUNTERS.format(n=2)
    + "echo '@@ loadavg'; cat /proc/loadavg; "
    "echo '@@ meminfo'; cat /proc/meminfo; "
    "echo '@@ snmp'; cat /proc/net/snmp; "
    "echo '@@ sockstat'; cat /proc/net/sockstat /proc/net/sockstat6 2>/dev/null; "
    "echo '@@ block'; ls /sys/block; "
    "echo '@@ virtual_block'; ls /sys/devices/virtual/block 2>/dev/null; "
    "echo '@@ virtual_net'; ls /sys/devices/virtual/net 2>/dev/null; "
    "echo '@@ df'; df -P -k -l -x tmpfs -x devtmpfs -x squashfs 2>/dev/null; "
    "echo '@@ end'"
)

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's sector size
# Errors reading malformed or missing sections: the values of that section become gaps, the others are kept.
_MALFORMED = (KeyError, ValueError, IndexError, ZeroDivisionError)

Sections = dict[str, list[str]]


def parse_server_output(output: str) -> ServerStats:
    """The stats in the output of :data:`SERVER_COMMAND`. Raises ValueError when the output is cut short or holds
    nothing recognisable; a single unreadable section only leaves its own values as None."""
    sections = _sections(output)
    values: dict = {}
    for parser in (_cpu, _load, _memory, _network, _disk_io, _tcp):
        try:
            values.update(parser(sections))
        except _MALFORMED:
            continue
    try:
        disks = _disks(sections)
    except _MALFORMED:
        disks = ()
    if not values and not disks:
        raise ValueError("the server's output holds none of the expected /proc data (is it a Linux host?)")
    return ServerStats(**values, disks=disks)


def _sections(output: str) -> Sections:
    sections: Sections = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("@@ "):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    if "end" not in sections:
        raise ValueError("the server's output was cut short")
    return sections


def _elapsed(sections: Sections) -> float:
    elapsed = float(sections["uptime 2"][0].split()[0]) - float(sections["uptime 1"][0].split()[0])
    if elapsed <= 0:
        raise ValueError("the uptime clock did not advance")
    return elapsed


def _rate(before: int, after: int, elapsed: float) -> float:
    if after < before:  # a counter reset (device removed and re-added, 32-bit wrap): no honest rate
        raise ValueError("counter went backwards")
    return (after - before) / elapsed


def _cpu(sections: Sections) -> dict:
    # user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    first, second = ([int(v) for v in sections[f"cpu {n}"][0].split()[1:9]] for n in (1, 2))
    deltas = [max(after - before, 0) for before, after in zip(first, second, strict=True)]
    total = sum(deltas)
    idle, iowait = deltas[3], deltas[4]
    return {
        "cpu_percent": 100.0 * (total - idle - iowait) / total,
        "cpu_iowait_percent": 100.0 * iowait / total,
    }


def _load(sections: Sections) -> dict:
    load1, load5, load15 = (float(v) for v in sections["loadavg"][0].split()[:3])
    return {"load1": load1, "load5": load5, "load15": load15}


def _memory(sections: Sections) -> dict:
    kib = {}
    for line in sections["meminfo"]:
        name, _, rest = line.partition(":")
        kib[name] = int(rest.split()[0])
    available = kib.get("MemAvailable", kib["MemFree"] + kib.get("Buffers", 0) + kib.get("Cached", 0))
    return {
        "mem_total": kib["MemTotal"] * 1024,
        "mem_used": (kib["MemTotal"] - available) * 1024,
        "swap_total": kib["SwapTotal"] * 1024,
        "swap_used": (kib["SwapTotal"] - kib["SwapFree"]) * 1024,
    }


def _counters(lines: list[str], row: Callable[[str], tuple[str, list[int]] | None]) -> dict[str, list[int]]:
    return dict(parsed for parsed in map(row, lines) if parsed is not None)


def _netdev_row(line: str) -> tuple[str, list[int]] | None:
    name, colon, numbers = line.partition(":")
    if not colon or "|" in numbers:  # the two header lines
        return None
    return name.strip(), [int(v) for v in numbers.split()]


def _network(sections: Sections) -> dict:
    """Physical interfaces only (bridges, veths and bonds carry the same bytes again); where every interface is
    virtual, as in a container, all but loopback."""
    first, second = (_counters(sections[f"netdev {n}"], _netdev_row) for n in (1, 2))
    virtual = {name.strip() for name in sections.get("virtual_net", [])}
    names = [name for name in second if name in first and name not in virtual]
    if not names:
        names = [name for name in second if name in first and name != "lo"]
    elapsed = _elapsed(sections)
    return {
        "net_in_bytes_per_s": sum(_rate(first[name][0], second[name][0], elapsed) for name in names),
        "net_out_bytes_per_s": sum(_rate(first[name][8], second[name][8], elapsed) for name in names),
    }


def _diskstats_row(line: str) -> tuple[str, list[int]] | None:
    fields = line.split()
    if len(fields) < 14:
        return None
    return fields[2], [int(v) for v in fields[3:]]


def _disk_io(sections: Sections) -> dict:
    """Whole physical disks only (/sys/block minus virtual devices): partitions, device-mapper and md devices
    count the same bytes as the disks beneath them."""
    first, second = (_counters(sections[f"diskstats {n}"], _diskstats_row) for n in (1, 2))
    virtual = {name.strip() for name in sections.get("virtual_block", [])}
    # /sys/block writes a "/" in a device name as "!" (cciss!c0d0 is cciss/c0d0 in /proc/diskstats).
    disks = [
        name.strip().replace("!", "/") for name in sections["block"] if name.strip() and name.strip() not in virtual
    ]
    disks = [name for name in disks if name in first and name in second]
    elapsed = _elapsed(sections)
    # Field indexes after the device name: 2 sectors read, 6 sectors written, 9 milliseconds with I/O in flight.
    return {
        "disk_read_bytes_per_s": sum(_rate(first[d][2], second[d][2], elapsed) for d in disks) * SECTOR_BYTES,
        "disk_write_bytes_per_s": sum(_rate(first[d][6], second[d][6], elapsed) for d in disks) * SECTOR_BYTES,
        "disk_busy_percent": min(
            100.0, max((_rate(first[d][9], second[d][9], elapsed) / 10.0 for d in disks), default=0.0)
        ),
    }


def _tcp(sections: Sections) -> dict:
    snmp = [line.split() for line in sections["snmp"] if line.startswith("Tcp:")]
    tcp = dict(zip(snmp[0][1:], snmp[1][1:], strict=True))
    sockstat = {}
    for line in sections["sockstat"]:
        protocol, _, rest = line.partition(":")
        words = rest.split()
        sockstat[protocol] = dict(zip(words[::2], (int(v) for v in words[1::2]), strict=False))
    time_wait = sockstat["TCP"]["tw"]
    return {
        "tcp_established": int(tcp["CurrEstab"]),
        "tcp_time_wait": time_wait,
        "tcp_total": sockstat["TCP"]["inuse"] + sockstat.get("TCP6", {}).get("inuse", 0) + time_wait,
    }


def _disks(sections: Sections) -> tuple[DiskUse, ...]:
    disks = []
    for line in sections["df"][1:]:  # after the header
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[1].isdigit():
            size, used, available = (int(v) * 1024 for v in fields[1:4])
            disks.append(DiskUse(mount=fields[5], size=size, used=used, available=available))
    return tuple(disks)
