"""paired.py TURNS COMMAND...: each COMMAND (sh -c) run in turn, TURNS times after 5 untimed
turns, so that a machine slowing down or speeding up (this one is a VM) weighs on all alike.
Prints, for each command, the median, minimum and maximum in ms of its runs less the median
of an empty `sh -c :` timed in the same turns (what hyperfine subtracts too). Exits non-zero
naming a command that failed. Used by bench/ssh.sh and bench/secret-service.sh."""
import statistics
import subprocess
import sys
import time

runs, commands = int(sys.argv[1]), [":"] + sys.argv[2:]
times = [[] for _ in commands]
for turn in range(runs + 5):
    for index, command in enumerate(commands):
        start = time.perf_counter()
        done = subprocess.run(["sh", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"failed: {command}")
        if turn >= 5:
            times[index].append(elapsed)
empty = statistics.median(times[0])
cells = []
for series in times[1:]:
    series = [max(0.0, t - empty) * 1000 for t in series]
    cells += [f"{statistics.median(series):.2f}", f"{min(series):.2f}", f"{max(series):.2f}"]
print(" ".join(cells))
