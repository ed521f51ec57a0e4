"""The server-stats command's output parser, on output written out by hand so every number can be worked out:
rates over the host's own clock, which devices count, and what becomes a gap."""

import pytest

from monitor.collect.procfs import SERVER_COMMAND, parse_server_output

NETDEV_HEADER = (
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier"
    " compressed"
)


def netdev(**interfaces: tuple[int, int]) -> str:
    rows = [f"{name:>6}: {rx} 10 0 0 0 0 0 0 {tx} 10 0 0 0 0 0 0" for name, (rx, tx) in interfaces.items()]
    return "\n".join([NETDEV_HEADER, *rows])


def diskstats(**devices: tuple[int, int, int]) -> str:
    """(sectors read, sectors written, milliseconds busy) per device."""
    return "\n".join(
        f" 8 0 {name} 10 0 {read} 5 20 0 {written} 7 0 {busy} 12 0 0 0 0 0 0"
        for name, (read, written, busy) in devices.items()
    )


def output(**sections: str) -> str:
    """A whole output of SERVER_COMMAND, each section replaceable (None leaves it out)."""
    parts = {
        "uptime 1": "1000.00 1900.00",
        "cpu 1": "cpu  100 0 100 700 100 0 0 0 0 0",
        "diskstats 1": diskstats(sda=(1000, 2000, 100), sda1=(900, 1900, 90), loop0=(5, 0, 1), **{"dm-0": (9, 9, 9)}),
        "netdev 1": netdev(lo=(0, 0), eth0=(1000, 0), docker0=(0, 0), veth1a2b=(0, 0)),
        "uptime 2": "1002.00 1903.00",
        "cpu 2": "cpu  150 0 150 900 200 0 0 0 0 0",
        "diskstats 2": diskstats(
            sda=(1100, 2400, 600), sda1=(1000, 2300, 590), loop0=(905, 0, 1), **{"dm-0": (999, 999, 999)}
        ),
        "netdev 2": netdev(lo=(10**9, 10**9), eth0=(3000, 500), docker0=(5000, 5000), veth1a2b=(7000, 7000)),
        "loadavg": "0.50 0.40 0.30 1/81 5771",
        "meminfo": "MemTotal:       16000 kB\nMemFree:         2000 kB\nMemAvailable:    6000 kB\nBuffers:  100 kB\n"
        "Cached:  3000 kB\nSwapTotal:       1000 kB\nSwapFree:         250 kB",
        "snmp": "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin ActiveOpens CurrEstab InSegs\nTcp: 1 200 51858 42 3328897",
        "sockstat": "sockets: used 10\nTCP: inuse 50 orphan 0 tw 7 alloc 60 mem 199\nUDP: inuse 0 mem 0\nTCP6: inuse 3",
        "block": "loop0\ndm-0\nsda",
        "virtual_block": "loop0\ndm-0",
        "virtual_net": "docker0\nlo\nveth1a2b",
        "df": "Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
        "/dev/sda1         1000 400  500      45% /\n"
        "/dev/sdb1         2000 100 1900       5% /mnt/my disk",
    }
    parts.update(sections)
    text = "".join(f"@@ {name}\n{body}\n" for name, body in parts.items() if body is not None)
    return text + "@@ end\n"


def test_cpu_shares_come_from_the_difference_of_the_two_readings():
    stats = parse_server_output(output())

    # user +50, system +50, idle +200, iowait +100 of 400 ticks
    assert stats.cpu_percent == 25.0 and stats.cpu_iowait_percent == 25.0


def test_network_rates_count_physical_interfaces_over_the_hosts_own_clock():
    stats = parse_server_output(output())

    # eth0 only (lo, the bridge and the veth are virtual), over the 2.00 s the uptime clock advanced
    assert stats.net_in_bytes_per_s == 1000.0 and stats.net_out_bytes_per_s == 250.0


def test_in_a_container_where_every_interface_is_virtual_all_but_loopback_count():
    stats = parse_server_output(output(virtual_net="eth0\nlo\ndocker0\nveth1a2b"))

    assert stats.net_in_bytes_per_s == (2000 + 5000 + 7000) / 2
    assert stats.net_out_bytes_per_s == (500 + 5000 + 7000) / 2


def test_disk_io_counts_whole_physical_disks_only():
    stats = parse_server_output(output())

    # sda: 100 sectors read, 400 written, 500 ms busy in 2 s; its partition, the loop and the mapper device repeat it
    assert stats.disk_read_bytes_per_s == 100 * 512 / 2
    assert stats.disk_write_bytes_per_s == 400 * 512 / 2
    assert stats.disk_busy_percent == 25.0


def test_memory_used_is_total_minus_available_in_bytes():
    stats = parse_server_output(output())

    assert stats.mem_total == 16000 * 1024 and stats.mem_used == 10000 * 1024
    assert stats.swap_total == 1000 * 1024 and stats.swap_used == 750 * 1024


def test_memory_available_is_estimated_on_kernels_that_do_not_report_it():
    meminfo = "MemTotal: 16000 kB\nMemFree: 2000 kB\nBuffers: 100 kB\nCached: 3000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB"

    assert parse_server_output(output(meminfo=meminfo)).mem_used == (16000 - 5100) * 1024


def test_load_tcp_and_file_systems():
    stats = parse_server_output(output())

    assert (stats.load1, stats.load5, stats.load15) == (0.5, 0.4, 0.3)
    assert (stats.tcp_established, stats.tcp_time_wait, stats.tcp_total) == (42, 7, 50 + 3 + 7)
    assert [(d.mount, d.size, d.used, d.available) for d in stats.disks] == [
        ("/", 1000 * 1024, 400 * 1024, 500 * 1024),
        ("/mnt/my disk", 2000 * 1024, 100 * 1024, 1900 * 1024),
    ]


def test_a_counter_that_went_backwards_leaves_a_gap_for_its_rates_only():
    stats = parse_server_output(output(**{"netdev 2": netdev(lo=(0, 0), eth0=(10, 0))}))

    assert stats.net_in_bytes_per_s is None and stats.net_out_bytes_per_s is None
    assert stats.cpu_percent == 25.0 and stats.disk_read_bytes_per_s == 100 * 512 / 2


def test_a_missing_section_leaves_a_gap_for_its_values_only():
    stats = parse_server_output(output(snmp=None, sockstat=None))

    assert stats.tcp_established is None and stats.tcp_total is None
    assert stats.mem_total == 16000 * 1024


def test_output_cut_short_is_rejected():
    with pytest.raises(ValueError, match="cut short"):
        parse_server_output(output().removesuffix("@@ end\n"))


def test_output_with_nothing_recognisable_is_rejected():
    with pytest.raises(ValueError, match="none of the expected /proc data"):
        parse_server_output("@@ end\n")


def test_the_command_is_one_fixed_string_with_nothing_left_to_fill_in():
    assert isinstance(SERVER_COMMAND, str)
    assert "{" not in SERVER_COMMAND and "%" not in SERVER_COMMAND
    assert SERVER_COMMAND.endswith("echo '@@ end'")
