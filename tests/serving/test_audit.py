"""The audit log on its own: JSON lines, rotation, read back oldest first, filters."""

import json

from finrag.serving.audit import AuditLog, matches, read_audit


def test_lines_rotate_and_read_back_in_order(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl", max_bytes=400, backups=3)
    for i in range(12):
        log.record(token=f"t{i % 2}", collections=["alpha"], path="/v1/answer", status=200,
                   routed=[f"DOC_{i}"], cited=[f"DOC_{i}", f"DOC_{i}"])
    log.close()
    rotated = sorted(p.name for p in tmp_path.iterdir())
    assert rotated[0] == "audit.jsonl" and len(rotated) == 4  # the file and 3 backups
    back = list(read_audit(tmp_path / "audit.jsonl"))
    seq = [int(e["routed"][0].split("_")[1]) for e in back]
    assert seq == sorted(seq) and seq[-1] == 11 and len(seq) < 12  # oldest dropped, in order
    assert back[-1]["cited"] == ["DOC_11"] and back[-1]["collections"] == ["alpha"]
    assert {oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()} == {"0o600"}
    assert [e["token"] for e in back if matches(e, token="t1")] == ["t1"] * sum(
        e["token"] == "t1" for e in back)
    assert [e["routed"] for e in back if matches(e, doc="DOC_11")] == [["DOC_11"]]
    assert not [e for e in back if matches(e, status=401)]
    (tmp_path / "audit.jsonl").write_text("{torn\n" + json.dumps(back[-1]) + "\n")
    assert list(read_audit(tmp_path / "audit.jsonl"))[-1] == back[-1]
