"""A local Hugging Face hub for tests: the real huggingface_hub client talks to it through HF_ENDPOINT.

`python -m specgate_sim.hub --root DIR --port N [--token T ...] [--cut-after-bytes N] [--throttle-bps N]
[--pid-file F]`

Repos live under DIR as written by `specgate_sim.fixtures`: `<org>/<name>/repo.json` (gated flag, branches) and
`<org>/<name>/<commit sha>/<files>`. What the client calls, all answered here:

- `GET /api/models/<repo>[/revision/<rev>][?blobs=1]` (model_info / repo_info; `blobs` adds sizes, blob ids, LFS sha256)
- `GET /api/models/<repo>/tree/<rev>[/<path>]?recursive=` (list_repo_tree, which snapshot_download uses)
- `GET /api/models/<repo>/refs` (list_repo_refs)
- `HEAD|GET /<repo>/resolve/<rev>/<path>` with ETag, X-Repo-Commit, X-Linked-Etag/-Size and HTTP Range

Errors carry the X-Error-Code header huggingface_hub maps to its exceptions: RepoNotFound, RevisionNotFound,
EntryNotFound, GatedRepo; a token the hub does not know gets "Invalid credentials in Authorization header".
Xet is never advertised, so the client downloads over plain HTTP.

Fault and observation switches (also as CLI flags): `POST /_admin/cut {"after_bytes", "times", "path"}` cuts file
bodies at an absolute byte offset (the client sees a dropped connection), `DELETE /_admin/cut` disarms it,
`POST /_admin/throttle {"bps"}` slows bodies down, `GET /_admin/stats` lists the requests served.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack")
LFS_MIN_BYTES = 10 * 1024 * 1024
# Hashing a sparse 550 GB shard would take minutes; larger files get a size-derived id and no sha256 (documented).
DEFAULT_HASH_LIMIT = 2 * 1024**3
CHUNK = 1024 * 1024
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"


@dataclass(frozen=True)
class FileEntry:
    path: str
    size: int
    lfs: bool
    sha256: str | None
    blob_id: str

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs and self.sha256 else self.blob_id

    def tree_json(self) -> dict:
        entry: dict = {"type": "file", "oid": self.blob_id, "size": self.size, "path": self.path}
        if self.lfs and self.sha256:
            entry["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": len(self._pointer())}
        return entry

    def sibling_json(self) -> dict:
        sibling: dict = {"rfilename": self.path, "size": self.size, "blobId": self.blob_id}
        if self.lfs and self.sha256:
            sibling["lfs"] = {"sha256": self.sha256, "size": self.size, "pointerSize": len(self._pointer())}
        return sibling

    def _pointer(self) -> bytes:
        return lfs_pointer(self.sha256 or "", self.size)


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def git_blob_id(data: bytes) -> str:
    """The git object id of a blob, what the hub reports as a small file's oid and ETag."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass
class Cut:
    after_bytes: int
    times: int  # responses still to cut; negative = until disarmed
    pattern: str = "*"

    def applies(self, path: str) -> bool:
        return self.times != 0 and fnmatch.fnmatch(path, self.pattern)


@dataclass
class HubState:
    root: Path
    tokens: frozenset[str]
    hash_limit: int = DEFAULT_HASH_LIMIT
    cut: Cut | None = None
    throttle_bps: int = 0
    requests: list[dict] = field(default_factory=list)
    _hashes: dict[tuple[str, int, int], tuple[str | None, str]] = field(default_factory=dict)

    def entry(self, base: Path, file: Path) -> FileEntry:
        stat = file.stat()
        rel = file.relative_to(base).as_posix()
        lfs = file.suffix in LFS_SUFFIXES or stat.st_size >= LFS_MIN_BYTES
        key = (str(file), stat.st_size, stat.st_mtime_ns)
        if key not in self._hashes:
            self._hashes[key] = self._identity(file, rel, stat.st_size, lfs)
        sha256, blob_id = self._hashes[key]
        return FileEntry(rel, stat.st_size, lfs, sha256, blob_id)

    def _identity(self, file: Path, rel: str, size: int, lfs: bool) -> tuple[str | None, str]:
        if size > self.hash_limit:
            return None, hashlib.sha1(f"unhashed\0{rel}\0{size}".encode(), usedforsecurity=False).hexdigest()
        if not lfs:
            return None, git_blob_id(file.read_bytes())
        digest = hashlib.sha256()
        with file.open("rb") as handle:
            while chunk := handle.read(CHUNK * 8):
                digest.update(chunk)
        sha256 = digest.hexdigest()
        return sha256, git_blob_id(lfs_pointer(sha256, size))


STATE: web.AppKey[HubState] = web.AppKey("specgate_hub_state", HubState)


class HubError(web.HTTPException):
    def __init__(self, status: int, code: str | None, message: str) -> None:
        self.status_code = status
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        super().__init__(headers=headers, text=json.dumps({"error": message}), content_type="application/json")


def _load_repo(state: HubState, repo_id: str) -> dict:
    meta_file = state.root / repo_id / "repo.json"
    if "/" not in repo_id or ".." in repo_id.split("/") or not meta_file.is_file():
        raise HubError(404, "RepoNotFound", f"Repository {repo_id} not found")
    return json.loads(meta_file.read_text())


def _authorize(state: HubState, request: web.Request, repo_id: str, meta: dict) -> None:
    header = request.headers.get("Authorization", "")
    token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    if token and token not in state.tokens:
        raise HubError(401, None, INVALID_CREDENTIALS)
    if meta.get("gated") and not token:
        raise HubError(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to it "
                                         "and be authenticated to access it. Please log in.")


def _resolve(state: HubState, request: web.Request, repo_id: str, revision: str) -> tuple[str, Path]:
    meta = _load_repo(state, repo_id)
    _authorize(state, request, repo_id, meta)
    sha = meta.get("branches", {}).get(revision) or meta.get("tags", {}).get(revision)
    if sha is None and COMMIT_RE.match(revision) and revision in meta.get("commits", []):
        sha = revision
    if sha is None or not (state.root / repo_id / sha).is_dir():
        raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
    return sha, state.root / repo_id / sha


def _files(state: HubState, base: Path) -> list[FileEntry]:
    return [state.entry(base, f) for f in sorted(base.rglob("*")) if f.is_file()]


def _record(state: HubState, request: web.Request, status: int, sent: int = 0) -> dict:
    record = {"method": request.method, "path": request.path, "status": status, "bytes": sent,
              "range": request.headers.get("Range")}
    state.requests.append(record)
    return record


@web.middleware
async def record_middleware(request: web.Request, handler):  # type: ignore[no-untyped-def]
    state: HubState = request.app[STATE]
    try:
        response = await handler(request)
    except web.HTTPException as error:
        _record(state, request, error.status)
        raise
    # File bodies record themselves (with the bytes really sent); admin calls are not traffic.
    if not request.path.startswith("/_admin") and not getattr(response, "_specgate_recorded", False):
        _record(state, request, response.status)
    return response


async def model_info(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
    sha, base = _resolve(state, request, repo_id, request.match_info.get("revision", "main"))
    meta = _load_repo(state, repo_id)
    files = _files(state, base)
    with_blobs = request.query.get("blobs", "").lower() in ("1", "true")
    siblings = [f.sibling_json() if with_blobs else {"rfilename": f.path} for f in files]
    config_file = base / "config.json"
    body = {
        "_id": hashlib.sha1(repo_id.encode(), usedforsecurity=False).hexdigest()[:24],
        "id": repo_id,
        "modelId": repo_id,
        "author": repo_id.split("/", maxsplit=1)[0],
        "sha": sha,
        "private": False,
        "gated": "manual" if meta.get("gated") else False,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": ["safetensors"],
        "library_name": "transformers",
        "lastModified": "2026-01-01T00:00:00.000Z",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "siblings": siblings,
        "config": json.loads(config_file.read_text()) if config_file.is_file() else None,
    }
    if with_blobs:
        body["usedStorage"] = sum(f.size for f in files)
    return web.json_response(body)


async def repo_tree(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
    _, base = _resolve(state, request, repo_id, request.match_info["revision"])
    sub = request.match_info.get("path", "").strip("/")
    start = base / sub if sub else base
    if not start.is_dir():
        raise HubError(404, "EntryNotFound", f"{sub} does not exist on this revision")
    recursive = request.query.get("recursive", "").lower() in ("1", "true")
    children = sorted(start.rglob("*") if recursive else start.iterdir())
    listing = []
    for child in children:
        rel = child.relative_to(base).as_posix()
        if child.is_dir():
            oid = hashlib.sha1(f"tree\0{rel}".encode(), usedforsecurity=False).hexdigest()
            listing.append({"type": "directory", "oid": oid, "size": 0, "path": rel})
        elif child.is_file():
            listing.append(state.entry(base, child).tree_json())
    return web.json_response(listing)


async def repo_refs(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
    meta = _load_repo(state, repo_id)
    _authorize(state, request, repo_id, meta)

    def refs(kind: str, prefix: str) -> list[dict]:
        return [{"name": n, "ref": f"refs/{prefix}/{n}", "targetCommit": s} for n, s in meta.get(kind, {}).items()]

    return web.json_response(
        {"branches": refs("branches", "heads"), "tags": refs("tags", "tags"), "converts": [], "pullRequests": []}
    )


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(start, end inclusive) of a single `bytes=` range, None without one; raises 416 when unsatisfiable."""
    if not header:
        return None
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        raise web.HTTPRequestRangeNotSatisfiable(headers={"Content-Range": f"bytes */{size}"})
    if match.group(1):
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else size - 1
    else:
        start, end = max(size - int(match.group(2)), 0), size - 1
    if start >= size or end < start:
        raise web.HTTPRequestRangeNotSatisfiable(headers={"Content-Range": f"bytes */{size}"})
    return start, min(end, size - 1)


async def resolve_file(request: web.Request) -> web.StreamResponse:
    state: HubState = request.app[STATE]
    repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
    sha, base = _resolve(state, request, repo_id, request.match_info["revision"])
    rel = request.match_info["path"]
    file = base / rel
    if ".." in Path(rel).parts or not file.is_file():
        raise HubError(404, "EntryNotFound", f"{rel} does not exist on revision {sha}")
    entry = state.entry(base, file)
    headers = {"X-Repo-Commit": sha, "ETag": f'"{entry.etag}"', "Accept-Ranges": "bytes",
               "Content-Type": "application/octet-stream"}
    if entry.lfs:
        headers["X-Linked-Etag"] = f'"{entry.etag}"'
        headers["X-Linked-Size"] = str(entry.size)
    byte_range = _parse_range(request.headers.get("Range"), entry.size)
    start, end = byte_range if byte_range else (0, entry.size - 1)
    length = max(end - start + 1, 0)
    response = web.StreamResponse(status=206 if byte_range else 200, headers=headers)
    if byte_range:
        response.headers["Content-Range"] = f"bytes {start}-{end}/{entry.size}"
    response.content_length = length
    response._specgate_recorded = True  # type: ignore[attr-defined]
    if request.method == "HEAD":
        _record(state, request, response.status)
        await response.prepare(request)
        return response
    await response.prepare(request)
    # Recorded before the body, counted before each write: a client that has every byte finds its request
    # recorded with every byte (recording after the last write raced the client's next look at the stats).
    record = _record(state, request, response.status)
    sent = await _stream(state, response, file, rel, (start, length), record=record)
    if sent < length:
        # Closing with bytes owed is what a dropped connection looks like to the client.
        if request.transport is not None:
            request.transport.abort()
        return response
    await response.write_eof()
    return response


async def _stream(
    state: HubState, response: web.StreamResponse, file: Path, rel: str, span: tuple[int, int], *, record: dict
) -> int:
    start, length = span
    stop = start + length
    cut = state.cut
    if cut is not None and cut.applies(rel):
        stop = min(stop, max(cut.after_bytes, start))
        if cut.times > 0:
            cut.times -= 1
    sent = 0
    with file.open("rb") as handle:
        handle.seek(start)
        position = start
        while position < stop:
            chunk = handle.read(min(CHUNK, stop - position))
            if not chunk:
                break
            position += len(chunk)
            sent += len(chunk)
            record["bytes"] = sent
            await response.write(chunk)
            if state.throttle_bps:
                await asyncio.sleep(len(chunk) / state.throttle_bps)
    return sent


async def admin_cut(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    if request.method == "DELETE":
        state.cut = None
        return web.json_response({"cut": None})
    body = await request.json()
    try:
        state.cut = Cut(int(body["after_bytes"]), int(body.get("times", -1)), str(body.get("path", "*")))
    except (KeyError, TypeError, ValueError) as error:
        message = f"cut needs an integer after_bytes (and optional times, path): {error}"
        raise web.HTTPBadRequest(text=message) from error
    return web.json_response({"cut": vars(state.cut)})


async def admin_throttle(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    body = await request.json()
    state.throttle_bps = max(int(body.get("bps", 0)), 0)
    return web.json_response({"bps": state.throttle_bps})


async def admin_stats(request: web.Request) -> web.Response:
    state: HubState = request.app[STATE]
    if request.method == "DELETE":
        state.requests.clear()
    return web.json_response({"requests": state.requests,
                              "cut": vars(state.cut) if state.cut else None, "throttle_bps": state.throttle_bps})


def make_app(root: Path, tokens: list[str] | None = None, *, cut: Cut | None = None, throttle_bps: int = 0,
             hash_limit: int = DEFAULT_HASH_LIMIT) -> web.Application:
    app = web.Application(middlewares=[record_middleware])
    app[STATE] = HubState(root=root, tokens=frozenset(tokens or []), hash_limit=hash_limit, cut=cut,
                            throttle_bps=throttle_bps)
    repo = "/{org}/{name}"
    app.router.add_get(f"/api/models{repo}", model_info)
    app.router.add_get(f"/api/models{repo}/revision/{{revision}}", model_info)
    app.router.add_get(f"/api/models{repo}/tree/{{revision}}", repo_tree)
    app.router.add_get(f"/api/models{repo}/tree/{{revision}}/{{path:.*}}", repo_tree)
    app.router.add_get(f"/api/models{repo}/refs", repo_refs)
    app.router.add_route("*", "/_admin/cut", admin_cut)
    app.router.add_post("/_admin/throttle", admin_throttle)
    app.router.add_route("*", "/_admin/stats", admin_stats)
    # add_get also answers HEAD, which is how huggingface_hub reads a file's metadata.
    app.router.add_get(f"{repo}/resolve/{{revision}}/{{path:.*}}", resolve_file)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specgate_sim.hub", description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, type=Path, help="hub root written by specgate_sim.fixtures")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30080)
    parser.add_argument("--token", action="append", default=[], help="an accepted token (repeatable)")
    parser.add_argument("--cut-after-bytes", type=int, default=None, help="drop file bodies at this byte offset")
    parser.add_argument("--cut-times", type=int, default=-1, help="how many responses to cut (-1: until disarmed)")
    parser.add_argument("--cut-path", default="*", help="glob of repo file paths the cut applies to")
    parser.add_argument("--throttle-bps", type=int, default=0, help="serve file bodies at most this fast")
    parser.add_argument("--pid-file", type=Path, default=None, help="write this process's id here (for stopping it)")
    parser.add_argument("--hash-limit-bytes", type=int, default=DEFAULT_HASH_LIMIT,
                        help="files above this size are not hashed (no sha256 published)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"--root {args.root} is not a directory; write fixtures first: python -m specgate_sim.fixtures")
    cut = Cut(args.cut_after_bytes, args.cut_times, args.cut_path) if args.cut_after_bytes is not None else None
    app = make_app(args.root, args.token, cut=cut, throttle_bps=args.throttle_bps, hash_limit=args.hash_limit_bytes)
    if args.pid_file is not None:
        args.pid_file.write_text(f"{os.getpid()}\n")
    web.run_app(app, host=args.host, port=args.port, print=lambda msg: print(msg, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
