"""`python -m rocketmq_operator.cli`: the console script."""

from rocketmq_operator.cli.main import main

raise SystemExit(main())
