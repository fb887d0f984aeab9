"""Scoped API tokens: who may read which collections, stored so that the file never holds a token.

A token is ``frg_<key id>_<secret>``. The file keeps, per token, its name, the key id, a salt
and a digest of the secret with the algorithm that made it, the collections it may read (``*``:
all), an optional expiry, whether it may ingest or administer, and when it was revoked. The key
id finds the one record to check. A secret is 256 random bits, so no guess can succeed and a
slow hash buys nothing: new tokens are checked with HMAC-SHA256 keyed by the salt, in
microseconds, on the Ingress's event loop. Tokens made before keep their scrypt digests (16 MiB
and tens of milliseconds a check): the first time a record's right secret is seen its scrypt is
run once and an HMAC of the secret kept in memory, after which wrong secrets for that key id
cost no scrypt either; a wrong secret is checked with scrypt once and remembered in a small
bounded cache. The file must be readable by its owner only: one that others may read or write is
refused, naming the file and its mode.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import stat
import tempfile
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from finrag.retrieval.documents import check_collections

PREFIX = "frg"
ALL = "*"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TOKEN_RE = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")
# the digest of tokens made before HMAC: scrypt at n=2**14, r=8, about 16 MiB and tens of
# milliseconds a check; records without an "algo" are of this kind
SCRYPT = "scrypt"
HMAC = "hmac-sha256"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
# the longest expiry a token may be given (a longer one is a typo, or past what dates can show)
MAX_EXPIRY_S = 100 * 365.25 * 86400


def default_tokens_file() -> Path:
    """$FINRAG_TOKENS_FILE, else ~/.config/finrag/tokens.json."""
    return Path(os.environ.get("FINRAG_TOKENS_FILE") or "~/.config/finrag/tokens.json").expanduser()


class TokenError(ValueError):
    """A token file or a token command that cannot be used as asked (the message says why)."""


@dataclass(frozen=True)
class Grant:
    """What one caller may do: read ``collections`` (None: every collection), ingest, administer."""

    name: str
    collections: frozenset[str] | None
    ingest: bool = False
    admin: bool = False

    def reads(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections

    def to_dict(self) -> dict:
        return {"token": self.name, "collections": None if self.collections is None
                else sorted(self.collections), "ingest": self.ingest, "admin": self.admin}


@dataclass
class TokenRecord:
    name: str
    key_id: str
    salt: str
    digest: str
    collections: list[str]
    ingest: bool = False
    admin: bool = False
    created: float = field(default_factory=time.time)
    expires: float | None = None
    revoked: float | None = None
    algo: str = SCRYPT

    def status(self, now: float | None = None) -> str:
        """active, revoked or expired; an expiry that is not a finite time (NaN, infinity, not
        a number: a file edited by hand or written by an old `finrag token`) counts as expired."""
        now = time.time() if now is None else now
        if self.revoked is not None:
            return "revoked"
        if self.expires is not None and not (
                isinstance(self.expires, (int, float)) and not isinstance(self.expires, bool)
                and math.isfinite(self.expires) and now < self.expires):
            return "expired"
        return "active"

    def grant(self) -> Grant:
        cols = None if ALL in self.collections else frozenset(self.collections)
        return Grant(self.name, cols, self.ingest, self.admin)

    def public(self) -> dict:
        """The record without its salt and digest (what `finrag token list` shows)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("salt", "digest", "algo")}
        return {**d, "status": self.status()}


def _scrypt(secret: str, salt: bytes) -> str:
    return hashlib.scrypt(secret.encode(), salt=salt, **_SCRYPT).hex()


def _hmac(secret: str, salt: bytes) -> str:
    return hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()


def check_expiry(expires_in_s: float | None, flag: str = "expires_in_s") -> None:
    """Refuse an expiry that is not a finite time ahead (NaN compares false with every time, so
    it never expired), or more than 100 years ahead."""
    if expires_in_s is None:
        return
    if not isinstance(expires_in_s, (int, float)) or isinstance(expires_in_s, bool) \
            or not math.isfinite(expires_in_s) or expires_in_s <= 0:
        raise TokenError(f"{flag} {expires_in_s!r}: an expiry must be a finite number above 0")
    if expires_in_s > MAX_EXPIRY_S:
        raise TokenError(f"{flag} {expires_in_s!r}: an expiry must be at most 100 years ahead "
                         f"(leave it out for a token that does not expire)")


def check_file_mode(path: Path) -> None:
    """Refuse a token file that is not a regular file or that anyone but its owner may read or
    write (mode & 0o077): it holds the digests every token is checked against."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise TokenError(f"token file {path} does not exist (create a token with "
                         f"`finrag token create`)") from None
    if not stat.S_ISREG(st.st_mode):
        raise TokenError(f"token file {path} is not a regular file")
    if st.st_mode & 0o077:
        raise TokenError(f"token file {path} has mode {stat.S_IMODE(st.st_mode):04o}: others "
                         f"may read or change it; make it 0600 (chmod 600 {path})")


class TokenStore:
    """The token file: create, list, revoke, and check a presented token."""

    def __init__(self, path: str | Path, *, cache_size: int = 4096, scrypt_misses: int = 1024):
        self.path = Path(path).expanduser()
        self._loaded: tuple[tuple[int, int], dict[str, TokenRecord]] | None = None
        # bounded LRUs keyed by the token's sha256: right tokens (their grants), and wrong
        # secrets already checked against a scrypt record; both emptied when the file changes
        self._verdicts: OrderedDict[bytes, Grant] = OrderedDict()
        self._misses: OrderedDict[bytes, None] = OrderedDict()
        self.cache_size, self.scrypt_misses = cache_size, scrypt_misses
        # a scrypt record (key id, salt, digest) -> the HMAC of its secret, once that was seen
        self._upgraded: dict[tuple[str, str, str], str] = {}

    # -- the file ---------------------------------------------------------------------------
    def _read(self) -> dict[str, TokenRecord]:
        check_file_mode(self.path)
        st = self.path.stat()
        version = (st.st_mtime_ns, st.st_size)
        if self._loaded and self._loaded[0] == version:
            return self._loaded[1]
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            records = {r["key_id"]: TokenRecord(**r) for r in raw["tokens"]}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
            raise TokenError(f"token file {self.path} is not a finrag token file "
                             f"({type(e).__name__})") from None
        unknown = [r.algo for r in records.values() if r.algo not in (SCRYPT, HMAC)]
        if unknown:
            raise TokenError(f"token file {self.path} has a digest of an unknown algorithm "
                             f"({str(unknown[0])[:40]!r}); was it written by a newer finrag?")
        self._loaded = (version, records)
        self._verdicts.clear()
        self._misses.clear()
        known = {(r.key_id, r.salt, r.digest) for r in records.values() if r.algo == SCRYPT}
        self._upgraded = {k: v for k, v in self._upgraded.items() if k in known}
        return records

    @contextmanager
    def _editing(self) -> Iterator[dict[str, TokenRecord]]:
        """The records under an exclusive lock, written back atomically (0600) on success."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            records = self._read() if self.path.exists() else {}
            yield records
            body = json.dumps({"version": 2, "tokens": [asdict(r) for r in records.values()]},
                              indent=1)
            tmp = tempfile.NamedTemporaryFile("w", dir=self.path.parent, delete=False,
                                              prefix=f".{self.path.name}.", encoding="utf-8")
            try:
                os.chmod(tmp.name, 0o600)
                tmp.write(body)
                tmp.flush()
                os.fsync(tmp.fileno())
                tmp.close()
                os.replace(tmp.name, self.path)
            except BaseException:
                tmp.close()
                Path(tmp.name).unlink(missing_ok=True)
                raise
            self._loaded = None
        finally:
            os.close(fd)

    # -- commands ---------------------------------------------------------------------------
    def create(self, name: str, collections: list[str], *, expires_in_s: float | None = None,
               ingest: bool = False, admin: bool = False) -> tuple[TokenRecord, str]:
        """A new token; returns its record and the token itself, shown once and never stored."""
        if not NAME_RE.match(name or ""):
            raise TokenError(f"token name {name!r}: 1 to 64 letters, digits, '.', '_' or '-'")
        if not collections:
            raise TokenError("a token needs at least one collection to read (or '*' for all)")
        try:
            collections = [ALL] if ALL in collections else check_collections(collections)
        except ValueError as e:
            raise TokenError(str(e)) from None
        check_expiry(expires_in_s)
        with self._editing() as records:
            if any(r.name == name for r in records.values()):
                raise TokenError(f"a token named {name!r} exists (revoke it or choose another name)")
            key_id, secret = secrets.token_hex(6), base64.urlsafe_b64encode(
                secrets.token_bytes(32)).decode().rstrip("=")
            salt = secrets.token_bytes(16)
            record = TokenRecord(name=name, key_id=key_id, salt=salt.hex(),
                                 digest=_hmac(secret, salt), collections=sorted(set(collections)),
                                 ingest=ingest, admin=admin,
                                 expires=None if expires_in_s is None else time.time() + expires_in_s,
                                 algo=HMAC)
            records[key_id] = record
        return record, f"{PREFIX}_{key_id}_{secret}"

    def list(self) -> list[TokenRecord]:
        return sorted(self._read().values(), key=lambda r: r.created) if self.path.exists() else []

    def revoke(self, name: str) -> TokenRecord:
        with self._editing() as records:
            found = [r for r in records.values() if r.name == name]
            if not found:
                raise TokenError(f"no token named {name!r} (`finrag token list` shows them)")
            if found[0].revoked is None:
                found[0].revoked = time.time()
        return found[0]

    # -- requests ---------------------------------------------------------------------------
    def verify(self, token: str) -> Grant | None:
        """The grant of a presented token; None when it is unknown, wrong, revoked or expired
        (the caller answers 401 to all four alike)."""
        m = _TOKEN_RE.match(token)
        if not m:
            return None
        records = self._read()
        key_id, secret = m.groups()
        record = records.get(key_id)
        if record is None or record.status() != "active":
            return None
        cache_key = hashlib.sha256(token.encode()).digest()
        grant = self._verdicts.get(cache_key)
        if grant is not None:
            self._verdicts.move_to_end(cache_key)
            return grant
        if not self._right(record, secret, cache_key):
            return None  # a wrong secret grows no cache here (see _right)
        grant = self._verdicts[cache_key] = record.grant()
        while len(self._verdicts) > self.cache_size:
            self._verdicts.popitem(last=False)
        return grant

    def _right(self, record: TokenRecord, secret: str, cache_key: bytes) -> bool:
        """Whether ``secret`` is the record's; a scrypt record costs one scrypt per secret at
        most (and none once its right secret was seen), within the bounds of the caches."""
        salt = bytes.fromhex(record.salt)
        if record.algo == HMAC:
            return hmac.compare_digest(_hmac(secret, salt), record.digest)
        upgraded = self._upgraded.get((record.key_id, record.salt, record.digest))
        if upgraded is not None:
            return hmac.compare_digest(_hmac(secret, salt), upgraded)
        if cache_key in self._misses:
            self._misses.move_to_end(cache_key)
            return False
        if hmac.compare_digest(_scrypt(secret, salt), record.digest):
            self._upgraded[(record.key_id, record.salt, record.digest)] = _hmac(secret, salt)
            return True
        self._misses[cache_key] = None
        while len(self._misses) > self.scrypt_misses:
            self._misses.popitem(last=False)
        return False
