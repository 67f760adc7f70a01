# Touchgate: `make bench` runs the benchmark suite (bench/run.sh) and writes BENCHMARKS.md.
.PHONY: bench
bench:
	bench/run.sh
