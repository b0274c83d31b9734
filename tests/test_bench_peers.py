"""bench/runners/peers.py: the pure parts (vault, naming, parsing, scores, report) and skipping absent peers."""

from __future__ import annotations

import datetime as dt
import json
import sys
import textwrap
from pathlib import Path

import pytest

from bench.data.peers_vault import (
    PathResolver,
    note_key,
    note_scores,
    parse_basic_memory,
    parse_qmd,
    parse_vault_memory,
    pooled_locomo,
    ratio,
    summarise,
    update_scores,
)
from bench.runners import peers


def _turn(dia: str, text: str) -> dict[str, str]:
    return {"dia_id": dia, "speaker": "Ann", "text": text}


def _conversation(sample_id: str) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [_turn("D1:1", "I adopted a cat named Miso."), _turn("D1:2", "She likes tuna.")],
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_2": [_turn("D2:1", "We went hiking at Mount Tam.")],
            "session_3_date_time": "9:00 am on 1 June, 2023",
            "session_3": [],  # listed, but no turns: no note
        },
        "qa": [
            {"question": "What is the cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "Where and what?", "answer": "x", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Adversarial?", "adversarial_answer": "no", "evidence": ["D1:1"], "category": 5},
            {"question": "Evidence in an empty session", "answer": "x", "evidence": ["D3:1"], "category": 2},
        ],
    }


def test_pooled_locomo_one_folder_per_conversation():
    pooled = pooled_locomo([_conversation("conv-1"), _conversation("conv-2")])
    assert sorted(pooled.files) == [
        "conv-1/session_1.md",
        "conv-1/session_2.md",
        "conv-2/session_1.md",
        "conv-2/session_2.md",
    ]
    assert "D1:1 Ann: I adopted a cat named Miso." in pooled.files["conv-1/session_1.md"]
    assert pooled.files["conv-1/session_1.md"].startswith("---\ndate: 2023-05-08T13:56:00+00:00\n")
    assert pooled.skipped == {"category_5": 2, "no_evidence": 2}
    assert [(q.conv, q.gold) for q in pooled.questions] == [
        ("conv-1", ("conv-1/session_1.md",)),
        ("conv-1", ("conv-1/session_1.md", "conv-1/session_2.md")),
        ("conv-2", ("conv-2/session_1.md",)),
        ("conv-2", ("conv-2/session_1.md", "conv-2/session_2.md")),
    ]
    assert pooled.questions[0].now == dt.datetime(2023, 5, 20, 11, 0, tzinfo=dt.UTC)  # last session + 1 h
    assert pooled_locomo([_conversation("a"), _conversation("b")], conversations=1).conversations == 1


def test_resolver_maps_each_tools_references_to_vault_paths():
    r = PathResolver(["conv-26/session_1.md", "conv-26/session_12.md", "conv-3/session_1.md"])
    assert r.resolve("conv-26/session_1.md") == "conv-26/session_1.md"  # ours, basic-memory's file_path
    assert r.resolve("bench-locomo/conv-26/session-1") == "conv-26/session_1.md"  # basic-memory permalink
    assert r.resolve("qmd://bench-locomo/conv-26/session-12.md") == "conv-26/session_12.md"  # qmd
    assert r.resolve("conv-3/session_1.md") == "conv-3/session_1.md"
    assert r.resolve("elsewhere/other.md") is None
    assert r.ranked(
        ["conv-3/session_1.md", "x", "conv-3/session_1.md", "conv-26/session_1.md", "conv-26/session_12.md"], 2
    ) == (["conv-3/session_1.md", "conv-26/session_1.md"], 1)
    assert note_key("QMD://A/B_c.md") == "a-b-c"
    with pytest.raises(ValueError, match="indistinguishable"):
        PathResolver(["a/b_c.md", "a/b-c.md"])


def test_parsers_read_each_tools_output():
    hits = [{"path": "a/b.md", "score": 1.0}, {"path": "c.md"}]
    assert parse_vault_memory(json.dumps(hits)) == ["a/b.md", "c.md"]  # a bare array (today)
    assert parse_vault_memory(json.dumps({"hits": hits, "count": 2})) == ["a/b.md", "c.md"]  # an object (soon)
    bm = {"results": [{"file_path": "x/s_1.md", "permalink": "p/x/s-1"}, {"permalink": "p/x/s-2"}], "total": 2}
    assert parse_basic_memory(bm) == ["x/s_1.md", "p/x/s-2"]
    assert parse_basic_memory(json.dumps(bm)) == ["x/s_1.md", "p/x/s-2"]
    assert parse_qmd([{"file": "qmd://c/a.md"}]) == ["qmd://c/a.md"]
    assert parse_qmd({"results": [{"file": "c/a.md"}]}) == ["c/a.md"]
    assert peers.Qmd("qmd", "qmd", "", "").parse_cold("No results found.\n") == []


def test_tool_payload_unwraps_structured_content_or_reads_text():
    assert peers.tool_payload({"structuredContent": {"result": {"results": []}}}) == {"results": []}
    assert peers.tool_payload({"structuredContent": {"hits": [], "count": 0}}) == {"hits": [], "count": 0}
    assert peers.tool_payload({"content": [{"type": "text", "text": '{"results": [1]}'}]}) == {"results": [1]}
    assert peers.tool_payload({"content": [{"type": "text", "text": "plain"}]}) == "plain"


def test_note_scores_and_summary():
    assert note_scores(["a", "b", "c"], ["b", "z"], k=5) == {"hit@5": 1.0, "recall@5": 0.5}
    assert note_scores(["a", "b", "c", "d", "e", "z"], ["z"], k=5) == {"hit@5": 0.0, "recall@5": 0.0}
    s = summarise(
        [
            (1, {"hit@5": 1.0, "recall@5": 0.5}),
            (1, {"hit@5": 0.0, "recall@5": 0.0}),
            (4, {"hit@5": 1.0, "recall@5": 1.0}),
        ]
    )
    assert s["pooled"] == {"n": 3, "hit@5": pytest.approx(0.6667, abs=1e-4), "recall@5": 0.5}
    assert s["by_category"]["1"] == {"n": 2, "hit@5": 0.5, "recall@5": 0.25}


def test_update_scores():
    assert update_scores(["new", "x", "old"], ["old", "new"]) == {
        "all_in_top5": 1.0,
        "newer_first": 1.0,
        "both": 1.0,
        "newest_in_top5": 1.0,
    }
    assert update_scores(["old", "new"], ["old", "new"])["both"] == 0.0
    assert update_scores(["new", "a", "b", "c", "d", "old"], ["old", "new"])["all_in_top5"] == 0.0


def test_ratio_and_its_format():
    assert ratio(12.0, 1.5) == 8.0
    assert ratio(None, 1.0) is None and ratio(1.0, 0.0) is None
    assert [peers.fmt_ratio(r) for r in (19.83, 7.767, 0.742, None)] == ["20×", "7.8×", "0.74×", ""]


def test_summary_rows_put_each_measure_beside_each_tool():
    results = {
        "first_index": {
            "locomo": {
                "vault-memory": {"seconds": 100.0},
                "vault-memory-fake": {"seconds": 20.0},
                "basic-memory": {"seconds": 120.0},
            }
        },
        "cold_query": {"vault-memory": {"median": 1.5}, "basic-memory": {"median": 15.0}},
        "warm": {
            "locomo": {
                "vault-memory: hybrid, decay on (default)": {"p50_ms": 20.0, "p95_ms": 40.0},
                "vault-memory: MCP": {"p50_ms": 25.0, "p95_ms": 50.0},
                "basic-memory: MCP": {"p50_ms": 80.0, "p95_ms": 120.0},
            }
        },
        "quality": {
            "locomo": {
                "vault-memory: hybrid, decay on (default)": {"pooled": {"recall@5": 0.8, "hit@5": 0.9}},
                "vault-memory: bm25 only": {"pooled": {"recall@5": 0.7, "hit@5": 0.8}},
                "basic-memory: MCP": {"pooled": {"recall@5": 0.6, "hit@5": 0.7}},
            }
        },
    }
    rows = peers.summary_rows(results, "vault-memory", "vault-memory-fake")
    assert rows["first index, s"] == {
        "vault-memory": 100.0,
        "basic-memory": 120.0,
        "vault-memory (fake embedder)": 20.0,
    }
    assert rows["warm query p50, ms"] == {"basic-memory": 80.0, "vault-memory": 20.0}
    assert rows["warm query p50 via MCP, ms"] == {"basic-memory": 80.0, "vault-memory": 25.0}
    assert rows["LoCoMo note recall@5"] == {"basic-memory": 0.6, "vault-memory": 0.8, "vault-memory (bm25 only)": 0.7}
    assert rows["updates: all in top 5 and newest first"] == {}


FAKE_SERVER = textwrap.dedent("""
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue  # a notification, or the client's answer to our ping
        if msg["method"] == "tools/call":
            print(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}), flush=True)  # a server request
            print("not json", flush=True)  # a stray print
            result = {"structuredContent": {"results": [{"file": msg["params"]["arguments"]["query"]}]}}
        else:
            result = {"protocolVersion": "2025-03-26", "capabilities": {}}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
""")


def test_mcp_client_against_a_fake_stdio_server(tmp_path: Path):
    client = peers.McpClient([sys.executable, "-c", FAKE_SERVER], dict(), tmp_path / "err.log", tmp_path)
    try:
        client.start(timeout=30)
        assert client.call("search", {"query": "a/b.md"}) == {"results": [{"file": "a/b.md"}]}
        assert client.call("search", {"query": "c.md"}) == {"results": [{"file": "c.md"}]}
    finally:
        client.close()
    assert client.proc.returncode == 0


def test_absent_peers_are_reported_missing(tmp_path: Path):
    _, _, found = peers.tools(tmp_path / "peers", "fake")
    assert [p.key for p in found] == ["basic-memory", "qmd"]
    for peer in found:
        why = peer.missing()
        assert why is not None and why.startswith("not installed")


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_run_skips_absent_peers_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The whole runner in quick mode on a tiny LoCoMo file, with no peers installed: exit 0, "skipped: why"."""
    from bench.__main__ import main

    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    (data / "locomo" / "locomo10.json").write_text(json.dumps([_conversation("conv-1")]), encoding="utf-8")
    monkeypatch.delenv("BENCH_PEERS_DIR", raising=False)
    monkeypatch.setenv("BENCH_PEERS_QUICK", "1")  # so the skip is for absence, not for quick mode
    out = tmp_path / "out"
    assert main(["peers", "--quick", "--data", str(data), "--out", str(out), "--cache", str(tmp_path / "cache")]) == 0
    payload = json.loads((out / "peers.quick.json").read_text(encoding="utf-8"))
    status = payload["results"]["status"]
    assert status["basic-memory"].startswith("skipped: not installed")
    assert status["qmd"].startswith("skipped: not installed")
    assert payload["results"]["first_index"]["locomo"]["vault-memory"]["seconds"] > 0
    quality = payload["results"]["quality"]["locomo"]["vault-memory: hybrid, decay on (default)"]
    assert quality["pooled"]["n"] == 2 and quality["unresolved_refs"] == 0
    assert "skipped: not installed" in (out / "peers.quick.md").read_text(encoding="utf-8")
