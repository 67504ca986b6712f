"""The `rocketmq-operator` console script, one module per family of subcommands.

`main` builds the parser (`cli.main`) and registers the family of the command given (`cli.main.FAMILIES`):
`cli.local` (the local platform), `cli.tools` (produce, consume), `cli.bench` (benches, chaos), `cli.agent` (the
lease agent). `cli.main` imports nothing else at import time: each command imports what it uses.
"""

from rocketmq_operator.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
