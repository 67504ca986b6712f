#!/usr/bin/env bash
# `make run`: the embedded default. Brings examples/quickstart.yaml up as real local RocketMQ processes,
# shows its status, writes and reads with quorum acks, and prints what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
ROP=${ROP:-.venv/bin/rocketmq-operator}  # overridable, for the test of this script
MANIFEST=examples/quickstart.yaml

echo "== what the quickstart means"
"$ROP" explain "$MANIFEST"
echo
echo "== local up (real namesrv + controller + 3 brokers on 127.0.0.1)"
"$ROP" local up -f "$MANIFEST" --wait
echo
echo "== status"
"$ROP" local status
json=$("$ROP" local status --json)
namesrv=$(python3 -c 'import json,sys; print(";".join(json.load(sys.stdin)["nameServers"]))' <<<"$json")
master=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["groups"][0]["master"]["replica"])' <<<"$json")
echo
echo "== produce 1000 messages with quorum acks (inSyncReplicas 2)"
"$ROP" produce --namesrv "$namesrv" --topic quickstart --count 1000 --size 1024
echo
echo "== consume them back"
"$ROP" consume --namesrv "$namesrv" --topic quickstart
echo
echo "== live view (3 refreshes)"
# The whole table: its topic rows come after the replicas and group lines (a `head` cut them to the header).
for _ in 1 2 3; do sleep 2; "$ROP" local status; echo; done
cat <<MSG
The quickstart is running. Try:
  $ROP local kill $master --signal KILL     # kill the master; the RocketMQ controller elects another
  $ROP local status --watch 1                # watch the new master, epoch and SyncStateSet
  $ROP produce --namesrv '$namesrv' --topic quickstart --count 1000
  $ROP local down                            # stop everything (add --purge to delete the data)
MSG
