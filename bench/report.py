"""The results: the summary figures saved in the JSON, and the table printed at the end."""

from __future__ import annotations

from pathlib import Path


def summarize(phases: dict[str, dict]) -> dict[str, object]:
    """Rates, the issue's ratios (per wall second and per own CPU second), RSS and load."""
    rates = {k: phases[k]["msgs_per_s"] for k in ("a_raw", "b_naive", "c_ingest") if k in phases}
    per_cpu = {
        k: phases[k]["msgs_per_own_cpu_s"] for k in ("a_raw", "b_naive", "c_ingest") if k in phases
    }
    summary: dict[str, object] = {"msgs_per_s": rates, "msgs_per_own_cpu_s": per_cpu}
    if "c_ingest" in rates and "b_naive" in rates:
        summary["c_over_b"] = round(rates["c_ingest"] / rates["b_naive"], 2)
        summary["c_over_b_per_own_cpu"] = round(per_cpu["c_ingest"] / per_cpu["b_naive"], 2)
    if "c_ingest" in rates and "a_raw" in rates:
        summary["c_over_a"] = round(rates["c_ingest"] / rates["a_raw"], 3)
        summary["c_over_a_per_own_cpu"] = round(per_cpu["c_ingest"] / per_cpu["a_raw"], 3)
    summary["peak_rss_mib"] = {k: v["peak_rss_mib"] for k, v in phases.items()}
    summary["loadavg"] = {k: v["loadavg_start"] + v["loadavg_end"] for k, v in phases.items()}
    return summary


def print_summary(results: dict[str, object], out: Path) -> None:
    """Prints the run's table, the ratios against the issue's targets, and the profile."""
    env, phases = results["environment"], results["phases"]
    summary = results["summary"]
    print()
    print(
        f"N={env['events']:,}  readers={env['readers']}  cores={env['cpu_count']}  "
        f"driver memory={env['spark_driver_memory']}  git={env['git']}  "
        f"python speed ms (start/end, lower is faster)="
        f"{'/'.join(str(v) for v in results.get('python_speed_ms', {}).values())}"
    )
    header = f"{'phase':<22}{'msg/s':>10}{'wall s':>9}{'driver':>8}{'jvm':>8}{'workers':>8}"
    print(header + f"{'nats':>7}{'own cpu':>9}{'msg/cpu-s':>10}{'other cpu':>10}  load 1m")
    approaches = phases.get("a_raw", {}).get("approaches", {})
    rows = ["publish", "a_raw", *[f"  raw_{k}" for k in approaches]]
    rows += ["b_naive", "c_ingest", "profile_spark_write", "profile_prototype"]
    for key in rows:
        phase = (
            phases.get("a_raw", {}).get("approaches", {}).get(key.strip()[4:])
            if key.startswith("  ")
            else phases.get(key)
        )
        if not phase:
            continue
        rss = phase["peak_rss_mib"]
        print(
            f"{key:<22}{phase.get('msgs_per_s', 0):>10,}{phase['wall_s']:>9.1f}"
            f"{rss['driver']:>8.0f}{rss['jvm']:>8.0f}{rss['python_workers']:>8.0f}"
            f"{rss['nats_server']:>7.0f}{phase['own_cpu_s']:>9.1f}"
            f"{round(phase.get('messages_timed', 0) / max(phase['own_cpu_s'], 1e-9)):>10,}"
            f"{phase['other_processes_cpu_s']:>10.1f}"
            f"  {phase['loadavg_start'][0]:.2f}/{phase['loadavg_end'][0]:.2f}"
        )
    print(
        "(RSS peaks in MiB; own cpu = CPU seconds of this benchmark's processes; other cpu = "
        "CPU seconds of every other process on the machine during the phase)"
    )
    if "c_over_b" in summary:
        print(
            f"c/b = {summary['c_over_b']}  (target >= 5; per own CPU second: "
            f"{summary['c_over_b_per_own_cpu']})"
        )
    if "c_over_a" in summary:
        print(
            f"c/a = {summary['c_over_a']}  (target >= 0.5; per own CPU second: "
            f"{summary['c_over_a_per_own_cpu']})"
        )
    if "c_ingest" in phases:
        print(f"(c) steps: {phases['c_ingest']['steps_s']}")
        print(
            f"(c) driver peak RSS: {phases['c_ingest']['peak_rss_mib']['driver']} MiB "
            "(target < 1536)"
        )
    if "profile_reader" in phases:
        reader = phases["profile_reader"]
        print(
            f"profile: one reader in-process, engine read_slice "
            f"{reader['read_slice_msgs_per_s']:,} msg/s, prototype reader "
            f"{reader['prototype_reader_msgs_per_s']:,} msg/s"
        )
        print("-- cProfile, caller thread --")
        print(reader["cprofile_caller_thread"])
        print("-- cProfile, event loop thread --")
        print(reader["cprofile_loop_thread"])
    print(f"results: {out}")
