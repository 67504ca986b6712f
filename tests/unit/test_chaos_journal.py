"""The campaign's journal: a JSON line per fault as soon as its window closed, the same line the record has."""

from __future__ import annotations

import json
from pathlib import Path

from rocketmq_operator.bench.chaos import CampaignJournal, _sends
from rocketmq_operator.bench.chaos_plan import HeldFault, check_campaign
from rocketmq_operator.tools.produce import SendRecord


def _answered(spec: list[tuple[float, bool]]) -> list[SendRecord]:
    """Records in answer order: each answered 0.1 s after it was sent."""
    return [
        SendRecord(i, f"k{i}", t - 0.1, t, 100.0, "PUT_OK" if ok else "NO_ROUTE", ok, 1, broker_name="b", queue_id=0)
        for i, (t, ok) in enumerate(spec)
    ]


def test_each_fault_is_on_record_when_its_window_closes_and_reads_as_the_record_does(tmp_path: Path) -> None:
    faults = [
        HeldFault(0, "kill", "master", ("b-0",), 1.5, 4.0, master="b-0"),
        HeldFault(1, "partition", "controllers-all", ("c-0",), 10.0, 12.5),
    ]
    spec = [(1.0, True), (2.0, False), (3.0, True), (11.0, False), (12.0, True), (13.0, True)]
    records = _answered(spec)
    path = tmp_path / "campaign.journal.jsonl"
    journal = CampaignJournal(path, {"seed": 3, "faults": 2})
    # The first fault's window closes when the second starts: the producer has answered up to 11.0 by then.
    journal.fault(faults[0], records[:4], end=10.0)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"campaign": {"seed": 3, "faults": 2}}
    first = lines[1]["fault"]
    assert (first["index"], first["failed_sends"], first["recovered"]) == (0, 1, True)
    assert (first["sent"], first["acknowledged"]) == (3, 2)  # the answer at 1.0 and at 3.0; 11.0 is the next window's
    journal.fault(faults[1], records, end=20.0)
    doc = check_campaign(_sends(records), faults, {r.key for r in records}, ended=20.0, deposed_acks=0)
    journal.record(doc)
    journal.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    second = lines[2]["fault"]
    assert (second["sent"], second["acknowledged"]) == (6, 4)
    for line, entry in zip(lines[1:3], doc["per_fault"], strict=True):
        assert {k: v for k, v in line["fault"].items() if k not in ("sent", "acknowledged")} == entry
    assert lines[3]["record"]["lost"] == 0 and "per_fault" not in lines[3]["record"]


def test_an_unrecovered_fault_carries_the_last_answers_in_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = CampaignJournal(path, {})
    journal.fault(HeldFault(0, "suspend", "master", ("b-0",), 1.5, 6.5), _answered([(1.0, True), (2.0, False)]), 9.0)
    journal.close()
    entry = json.loads(path.read_text().splitlines()[1])["fault"]
    assert entry["recovered"] is False and [s["key"] for s in entry["last_sends"]] == ["k1"]
