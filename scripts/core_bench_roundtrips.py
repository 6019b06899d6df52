"""The cross-core round trips a core_bench run reported (docs/performance.md,
"Slow spells of cross-core traffic"), for the scripts that judge its runs."""

import re


def roundtrips(report, stderr):
    """Round trips in ns, from a core_bench JSON report (already parsed) and
    its stderr: before its benchmarks (context), before each one (counter
    roundtrip_before_ns; of aggregates, the median's) and after them all."""
    found = [bench["roundtrip_before_ns"] for bench in report.get("benchmarks", [])
             if "roundtrip_before_ns" in bench and bench.get("aggregate_name", "median") == "median"]
    before = report.get("context", {}).get("cross_core_roundtrip_ns", "unknown")
    after = re.search(r"cross_core_roundtrip_ns at the end: (\S+)", stderr)
    for text in (before, after.group(1) if after else "unknown"):
        if text != "unknown":
            found.append(float(text))
    return found
