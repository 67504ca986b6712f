"""Benchmarks that print JSON: `rocketmq-operator bench failover` (and `bench spark` when the spark extra is here).

Figures are recorded in docs/benchmarks.md with the command and the machine; tests never assert timings.
"""
