"""The Kubernetes platform: kopf handlers that apply rendered objects with server-side apply.

Handlers only capture intent (create/update) and schedule a level-based pass (timer); the pass itself is
`reconcile.reconcile`, which is resumable from the cluster alone. Nothing here holds cluster state in globals.
"""
