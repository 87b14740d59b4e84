"""walkie-session vs pydantic-ai's realtime session: the same synthetic stream, in one run.

Runs the criterion benchmark `session_events` of walkie-session (release), reads its estimates, runs
pydantic_session_bench.py's two modes, and prints events per second for both systems and the ratio.
Run it through run.sh, which prepares the virtual environment under target/.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pydantic_session_bench as pyd

REPO = Path(__file__).resolve().parents[2]
MODES = ('active_iterator', 'no_iterator')


def rust_events_per_s(target_dir: Path) -> tuple[dict[str, float], list[str]]:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    completed = subprocess.run(
        ['cargo', 'bench', '-p', 'walkie-session', '--bench', 'session_events'],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        sys.exit(f'cargo bench failed ({completed.returncode}):\n{completed.stderr[-4000:]}')
    allocation_lines = [line for line in completed.stdout.splitlines() if 'allocations:' in line]
    rates = {}
    for mode in MODES:
        folder = target_dir / 'criterion' / 'session_events' / mode / 'new'
        mean_ns = json.loads((folder / 'estimates.json').read_text())['mean']['point_estimate']
        events_per_iteration = json.loads((folder / 'benchmark.json').read_text())['throughput']['Elements']
        rates[mode] = events_per_iteration / (mean_ns * 1e-9)
    return rates, allocation_lines


def main() -> None:
    target_dir = Path(os.environ.get('CARGO_TARGET_DIR', REPO / 'target' / 'session'))
    rust, allocation_lines = rust_events_per_s(target_dir)
    python = {}
    for mode, run in (('active_iterator', pyd.run_active_iterator), ('no_iterator', pyd.run_no_iterator)):
        python[mode] = max((asyncio.run(run(200)) for _ in range(3)), key=lambda r: r['events_per_s'])
    print(f'python {sys.version.split()[0]}, pydantic-ai-slim {pyd_version()}')
    print(f'{"mode":<16} {"walkie-session":>18} {"pydantic-ai":>14} {"ratio":>8}')
    for mode in MODES:
        ratio = rust[mode] / python[mode]['events_per_s']
        print(
            f'{mode:<16} {rust[mode] / 1e6:>12.2f} M ev/s {python[mode]["events_per_s"] / 1e3:>8.1f} k ev/s {ratio:>7.0f}x'
        )
    for line in allocation_lines:
        print(line)
    print(json.dumps({'walkie_session_events_per_s': rust, 'pydantic_ai': python}))


def pyd_version() -> str:
    from importlib.metadata import version

    return version('pydantic-ai-slim')


if __name__ == '__main__':
    main()
