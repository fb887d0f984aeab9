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


def test_an_answer_request_writes_one_line_whatever_ends_it_first(tmp_path):
    """The Ingress's line of an answer request: the stream's end, the middleware and a client
    gone may each try to write it; only the first does."""
    from finrag.serving.routes.replies import AnswerAudit
    from finrag.serving.admission import Gate
    from finrag.serving.config import AppConfig
    from finrag.serving.metrics import Metrics
    from finrag.serving.tokens import Grant

    cfg = AppConfig.model_validate({"auth": {"audit_file": str(tmp_path / "audit.jsonl"),
                                             "bearer_token_env": None}})
    gate = Gate(cfg, Metrics())
    line = AnswerAudit(gate, Grant("desk", frozenset({"alpha"})), "/v1/answer")
    line.what["system"] = "hdrr"
    line.end(499, ended="client_closed")
    line.end(200, routed=["DOC_A"])
    other = AnswerAudit(gate, None, "/v1/chat/completions")
    other.end(504, ended="deadline")
    gate.audit.close()
    back = list(read_audit(tmp_path / "audit.jsonl"))
    assert [(e["path"], e["status"], e.get("ended"), e["token"]) for e in back] == [
        ("/v1/answer", 499, "client_closed", "desk"),
        ("/v1/chat/completions", 504, "deadline", None)]
    assert back[0]["system"] == "hdrr" and back[0]["collections"] == ["alpha"]


def test_errors_of_deployment_calls_reach_the_client_as_an_incident_id(caplog):
    from finrag.retrieval.answer import Answer, Routing
    from finrag.serving.routes.replies import private_errors

    ray_text = ("RayTaskError(ValueError): ray::ServeReplica:finrag:Generator.generate() "
                "(pid=4242, ip=10.1.2.3, actor_id=abc)")
    answer = Answer("q", "hdrr", "", routing=Routing(
        "fallback_unresolved", detail=f"no company named | router LLM failed: {ray_text}"))
    private_errors(answer)
    shown = json.dumps(answer.to_dict())
    assert "pid=" not in shown and "10.1.2.3" not in shown and "Generator" not in shown
    assert answer.routing.detail.startswith("no company named | router LLM failed (incident ")
    assert caplog.text.count("10.1.2.3") == 1  # the log has the whole text, under its id
