"""The `rocketmq-operator` console script, one module per family of subcommands.

`main` builds the parser (`cli.main`) and registers every family explicitly: `cli.local` (the local platform),
`cli.tools` (produce, consume), `cli.bench` (failover, routes) and `cli.bench_spark` (bench spark).
"""

from rocketmq_operator.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
