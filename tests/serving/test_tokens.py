"""Scoped API tokens (serving/tokens.py): stored hashed, checked by key id, revoked and expired
tokens refused, a file that others may read refused at start."""

import json
import os
import time

import pytest

from finrag.serving.tokens import Grant, TokenError, TokenStore, check_file_mode


@pytest.fixture
def store(tmp_path):
    return TokenStore(tmp_path / "tokens.json")


def test_a_created_token_is_checked_and_never_stored(store):
    record, token = store.create("desk-a", ["alpha", "public"], ingest=True)
    assert token.startswith(f"frg_{record.key_id}_")
    text = store.path.read_text()
    assert token not in text and token.split("_")[-1] not in text  # only salt and digest
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"
    grant = store.verify(token)
    assert grant == Grant("desk-a", frozenset({"alpha", "public"}), ingest=True, admin=False)
    assert grant.reads("alpha") and not grant.reads("beta")
    # one character off, another key id, garbage, an empty string: all refused alike
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    other = f"frg_{'0' * 12}_{token.split('_', 2)[2]}"
    assert [store.verify(t) for t in (wrong, other, "nonsense", "")] == [None] * 4


def test_all_collections_and_listing_without_secrets(store):
    _, token = store.create("ops", ["*"], admin=True)
    assert store.verify(token).collections is None
    [listed] = [r.public() for r in store.list()]
    assert listed["name"] == "ops" and listed["status"] == "active" and listed["admin"]
    assert "digest" not in listed and "salt" not in listed


def test_revoked_and_expired_tokens_are_refused(store):
    _, token = store.create("gone", ["alpha"])
    assert store.verify(token) is not None  # cached as valid ...
    store.revoke("gone")
    assert store.verify(token) is None  # ... and the revocation still counts
    assert store.list()[0].status() == "revoked"
    _, short = store.create("brief", ["alpha"], expires_in_s=0.5)
    assert store.verify(short) is not None
    time.sleep(0.6)
    assert store.verify(short) is None and store.list()[1].status() == "expired"


def test_bad_commands_say_why(store):
    store.create("a", ["alpha"])
    with pytest.raises(TokenError, match="exists"):
        store.create("a", ["beta"])
    with pytest.raises(TokenError, match="at least one collection"):
        store.create("b", [])
    with pytest.raises(TokenError, match="token name"):
        store.create("../etc", ["alpha"])
    with pytest.raises(TokenError, match="no token named 'zzz'"):
        store.revoke("zzz")


def test_a_file_others_may_read_is_refused_naming_it(store, tmp_path):
    _, token = store.create("a", ["alpha"])
    os.chmod(store.path, 0o644)
    with pytest.raises(TokenError, match=r"tokens.json has mode 0644"):
        store.verify(token)
    os.chmod(store.path, 0o600)
    assert store.verify(token) is not None
    with pytest.raises(TokenError, match="does not exist"):
        check_file_mode(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tokens": [{"name": 1}]}))
    os.chmod(bad, 0o600)
    with pytest.raises(TokenError, match="not a finrag token file"):
        TokenStore(bad).list()


def test_creating_a_token_for_a_collection_the_index_lacks_warns(two_collections, tmp_path,
                                                                 capsys):
    """A typo in a collection name is a token that reads nothing: `finrag token create` says
    so when the index holds no document of it (and still makes the token: one may be made
    before its collection's first ingest)."""
    from finrag.serving.cli import main

    tokens = tmp_path / "tokens.json"
    assert main(["token", "create", "t1", "--collection", "alpha", "--collection", "aplha",
                 "--index", str(two_collections), "--file", str(tokens)]) == 0
    err = capsys.readouterr().err
    assert "is in aplha yet" in err and "alpha," not in err
    assert main(["token", "create", "t2", "--collection", "beta", "--index",
                 str(two_collections), "--file", str(tokens)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert [r.name for r in TokenStore(tokens).list()] == ["t1", "t2"]
