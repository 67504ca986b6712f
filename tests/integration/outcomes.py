"""What a loaded machine may do to a client's send without anything being wrong with the cluster.

`LOAD_FAILURES`: the failure kinds a send can end with when a 2-core machine runs the integration suite in
parallel (a route lookup or a request timing out, the broker's flow control, a slave that did not confirm within
the master's sync timeout: stored on the master, not acknowledged as replicated). Tests that assert outcomes under
load allow these and nothing else: never an authentication refusal, a wrong route or a lost acknowledgement.
"""

from __future__ import annotations

LOAD_FAILURES = frozenset(
    {"NO_ROUTE", "SYSTEM_BUSY", "TIMEOUT", "CONNECTION_ERROR", "SERVICE_NOT_AVAILABLE", "FLUSH_SLAVE_TIMEOUT"}
)
