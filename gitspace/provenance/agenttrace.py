"""Agent Trace v0.1 records (cursor/agent-trace, ``schemas.ts`` ``TraceRecordSchema``) of the
commits a note covers: ``gitspace provenance --format agent-trace``.

Invariants:
- One record per commit with a note: ``version`` ``0.1.0``; ``id`` a UUID derived from the
  commit id (the same commit always gets the same record id); ``timestamp`` the commit's time,
  RFC 3339 in UTC; ``vcs`` ``{"type": "git", "revision": <commit>}``; ``tool`` gitspace and its
  version; ``files``: each attested path with one conversation per key, its contributor
  (``ai`` with ``model_id``, or ``human``) and ranges with a ``content_hash`` of their lines;
  ``metadata.gitspace``: the session, op and tool of each conversation, never text.
- A model id follows models.dev's ``provider/model`` when the provider is plain from the name
  (``claude-*``: ``anthropic/``), and is left out when unknown.
"""

from __future__ import annotations

import hashlib
import time
import uuid

from ..storage.gitrepo import GitRepo
from . import authorship, matching
from .notes import Notes

VERSION = "0.1.0"
_NAMESPACE = uuid.UUID("6b0e6c53-2e35-4c7b-9a51-6a7c2f0d4b8e")  # gitspace's, for record ids
_PROVIDERS = (("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"),
              ("gemini", "google"))


def model_id(model: object) -> str | None:
    if not isinstance(model, str) or not model or model == "unknown":
        return None
    if "/" in model:
        return model[:250]
    provider = next((p for prefix, p in _PROVIDERS if model.startswith(prefix)), None)
    return (f"{provider}/{model}" if provider else model)[:250]


def record_of(repo: GitRepo, sha: str, note: authorship.Note) -> dict[str, object]:
    commit = repo.commit(sha)
    files = []
    conversations_meta = {}
    tree = commit.tree
    for path in sorted(note.files):
        entry = repo.entry_at(tree, path)
        lines = matching.split(repo.read_blob(entry.sha)) if entry is not None and \
            not entry.is_tree else []
        conversations = []
        for key, ranges in sorted(note.files[path].items(), key=lambda kv: kv[1][0]):
            record_ = note.record_of(key) or {}
            kind = authorship.kind_of(key)
            contributor: dict[str, object] = {"type": "ai" if kind == "agent" else "human"}
            agent_id = record_.get("agent_id") if isinstance(record_.get("agent_id"), dict) else {}
            assert isinstance(agent_id, dict)
            found = model_id(agent_id.get("model"))
            if kind == "agent" and found:
                contributor["model_id"] = found
            conversations.append({
                "contributor": contributor,
                "ranges": [{"start_line": a, "end_line": b,
                            "content_hash": _hash(lines[a - 1:b])} for a, b in ranges],
            })
            head, trace = authorship.split_key(key)
            traced = note.traces.get(trace or "", {})
            conversations_meta[key] = {"session": agent_id.get("id"), "tool": agent_id.get(
                "tool"), "op": traced.get("op"), "call": traced.get("tool"),
                "agent": traced.get("agent")} if kind == "agent" else {
                "author": record_.get("author")}
        files.append({"path": path, "conversations": conversations})
    return {
        "version": VERSION,
        "id": str(uuid.uuid5(_NAMESPACE, sha)),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(commit.time)),
        "vcs": {"type": "git", "revision": sha},
        "tool": {"name": "gitspace", "version": _version()},
        "files": files,
        "metadata": {"gitspace": {"keys": conversations_meta,
                                  "standard": authorship.SCHEMA}},
    }


def records(repo: GitRepo, commits: list[str]) -> list[dict[str, object]]:
    notes = Notes(repo)
    out = []
    for sha in commits:
        note = notes.get(sha)
        if note is not None:
            out.append(record_of(repo, sha, note))
    return out


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gitspace")
    except metadata.PackageNotFoundError:
        return "unknown"


def _hash(lines: list[bytes]) -> str:
    return "sha256:" + hashlib.sha256(b"\n".join(lines)).hexdigest()[:32]
