"""provenance/agenttrace.py: ``gitspace provenance --format agent-trace`` prints Agent Trace v0.1
records that validate against a JSON Schema made here, field for field, from
``TraceRecordSchema`` in cursor/agent-trace's ``schemas.ts``."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path

import jsonschema
from authored import agent_edits, agent_writes, checkout, gs, person

# schemas.ts, zod → JSON Schema (draft 2020-12), as its own generateJsonSchemas() would write it
# with $refStrategy "none". Its version regex is the string "^[0-9]+\\.[0-9]+\\.[0-9]+$" in a
# JS regex literal (a backslash, then any character), which no semver matches; the README's
# published schema says "^[0-9]+\.[0-9]+\.[0-9]+$", the evident intent, used here.
CONTRIBUTOR = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["human", "ai", "mixed", "unknown"]},
        "model_id": {"type": "string", "maxLength": 250},
    },
    "required": ["type"],
    "additionalProperties": False,
}
TRACE_RECORD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "version": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+$"},
        "id": {"type": "string", "format": "uuid"},
        "timestamp": {"type": "string", "format": "date-time"},
        "vcs": {"type": "object", "properties": {
            "type": {"type": "string", "enum": ["git", "jj", "hg", "svn"]},
            "revision": {"type": "string"}},
            "required": ["type", "revision"], "additionalProperties": False},
        "tool": {"type": "object", "properties": {"name": {"type": "string"},
                                                  "version": {"type": "string"}},
                 "required": ["name", "version"], "additionalProperties": False},
        "files": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "conversations": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "format": "uri"},
                        "contributor": CONTRIBUTOR,
                        "ranges": {"type": "array", "items": {
                            "type": "object",
                            "properties": {
                                "start_line": {"type": "integer", "minimum": 1},
                                "end_line": {"type": "integer", "minimum": 1},
                                "content_hash": {"type": "string"},
                                "contributor": CONTRIBUTOR,
                            },
                            "required": ["start_line", "end_line"],
                            "additionalProperties": False}},
                        "related": {"type": "array", "items": {
                            "type": "object",
                            "properties": {"type": {"type": "string"},
                                           "url": {"type": "string", "format": "uri"}},
                            "required": ["type", "url"], "additionalProperties": False}},
                    },
                    "required": ["ranges"],
                    "additionalProperties": False}},
            },
            "required": ["path", "conversations"],
            "additionalProperties": False}},
        "metadata": {"type": "object", "additionalProperties": {}},
    },
    "required": ["version", "id", "timestamp", "files"],
    "additionalProperties": False,
}


def validate(record: object) -> None:
    jsonschema.Draft202012Validator(
        TRACE_RECORD, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(record)
    assert isinstance(record, dict)
    uuid.UUID(record["id"])
    datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))  # RFC 3339


def test_a_commits_record_validates_and_names_its_revision(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    agent_writes(root, "src/new.py", "a = 1\nb = 2\n", "toolu_1")
    agent_edits(root, "src/app.py", "hi", "hello", "toolu_2")
    (root / "src" / "new.py").write_text("a = 1\nb = 2\nc = 3\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "work")
    record = json.loads(gs(root, "provenance", "--format", "agent-trace").stdout)
    validate(record)
    head = person(root, "rev-parse", "HEAD").stdout.strip()
    assert record["vcs"] == {"type": "git", "revision": head}
    assert record["version"] == "0.1.0"
    by_path = {f["path"]: f for f in record["files"]}
    kinds = [c["contributor"]["type"] for c in by_path["src/new.py"]["conversations"]]
    assert kinds == ["ai", "human"]
    assert by_path["src/new.py"]["conversations"][0]["ranges"][0]["start_line"] == 1
    assert json.loads(gs(root, "provenance", "--format", "agent-trace").stdout)["id"] == \
        record["id"], "the same commit always gets the same record id"
    # A range: one record per noted commit, every one valid.
    person(root, "commit", "-q", "--allow-empty", "-m", "nothing")
    agent_writes(root, "src/more.py", "m = 1\n", "toolu_3")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "more")
    records = json.loads(gs(root, "provenance", "HEAD~3..HEAD", "--format", "agent-trace").stdout)
    assert [r["vcs"]["revision"] for r in records] == [head, person(
        root, "rev-parse", "HEAD").stdout.strip()]
    for r in records:
        validate(r)
    assert "transcript" not in json.dumps(records) and "hello" not in json.dumps(records)
