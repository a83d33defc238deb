"""The journal policy through the real loop and the real tools: a tree of summaries that covers
every entry exactly once, on sparse and dense logs, and a run killed mid-way that resumes without
repeating an op.

What each run did is read back from git (``ops``) and from the files it left (the tree is walked
from ``summaries/index.md`` by ``benchmarks/summary_tree.py``), never from the policy's notes.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE, assert_clean, call_ok, files, git, gitspace_cli, ops

import gitspace
from gitspace.agent import session as sessions
from gitspace.agent.loop import Loop, LoopEvent, LoopOptions, RunOutcome
from gitspace.agent.policies.journal import JournalPolicy, _named_log
from gitspace.agent.policies.journal_tree import FANOUT
from gitspace.errors import BadArguments

sys.path.insert(0, str(REPO / "benchmarks"))
import gen_worklog  # noqa: E402
import summary_tree  # noqa: E402

JOURNAL = "journal/worklog.jsonl"
CAP = 16_000  # characters of a tool result, and of any file the policy writes


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    gitspace.init(root, agent="runner").close()
    return root


SMALL = 850  # entries: ten chunks or so at the sample's density


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """The sample workspace with a shorter journal of the same density."""
    root = tmp_path / "small"
    shutil.copytree(SAMPLE, root)
    assert gen_worklog.write(root / JOURNAL, entries=SMALL) == SMALL
    gitspace.init(root, agent="runner").close()
    return root


def run(root: Path, policy: JournalPolicy, task: str, events: list[LoopEvent] | None = None,
        budget: int = 20_000) -> RunOutcome:
    with gitspace.open(root, agent="runner") as ws:
        return Loop(ws, policy, LoopOptions(budget=budget, keep_last=4, max_steps=2_000),
                    events.append if events is not None else None).start(task)


def tool_events(events: list[LoopEvent], name: str) -> list[LoopEvent]:
    return [e for e in events if e.kind == "tool" and e.name == name]


def assert_within_caps(events: list[LoopEvent]) -> None:
    """Every tool result, and every file a create call carried, within the caps."""
    assert all(e.result is not None and len(e.result.text) <= CAP for e in events if e.kind == "tool")
    assert all(len(e.input["file_text"]) <= CAP for e in tool_events(events, "create"))


def assert_narrowed(ranges: list[LoopEvent]) -> None:
    """Each refused window is asked again from its start: narrower, or page by page when no
    narrower window of whole minutes would do."""
    refused = [e for e in ranges if e.result and not e.result.ok]
    assert all("Refused" in e.result.text for e in refused if e.result)
    for no in refused:
        after = ranges[ranges.index(no) + 1]
        assert after.input["start"] == no.input["start"]
        assert after.input["end"] < no.input["end"] or (
            after.input.get("skip") == 0 and after.input["end"] == no.input["end"])


def test_the_journal_becomes_a_tree_of_summaries_within_a_small_conversation(sample: Path) -> None:
    events: list[LoopEvent] = []
    # The task names no worklog: the policy asks peek for the workspace's, then reads that one.
    outcome = run(sample, JournalPolicy(), "Summarise the journal chunk by chunk, one file per "
                  "chunk under summaries/, then summaries/index.md.", events, budget=30_000)
    assert outcome.status == "done", outcome.text

    peeks = tool_events(events, "peek")
    assert [p.input for p in peeks] == [{}, {"path": JOURNAL}]
    assert peeks[0].result and f"- {JOURNAL}: JSON Lines file" in peeks[0].result.text
    ranges = tool_events(events, "range")
    read = [e for e in ranges if e.result and e.result.ok]
    assert_narrowed(ranges)
    assert read[0].input["start"] == "2023-01-02" and read[-1].input["end"] > "2024-12-30"
    assert all(a.input["end"] == b.input["start"] for a, b in zip(read, read[1:], strict=False))

    tree = files(sample)
    leaves = sorted(p for p in tree if re.fullmatch(r"summaries/\d{4}/.*\.md", p))
    windows = sorted(f"summaries/{e.input['start'][:4]}/{e.input['start']}_{e.input['end']}.md"
                     for e in read if e.result and not e.result.text.startswith("0 entries"))
    assert leaves == windows
    assert all(len(tree[p]) <= 1_300 for p in leaves)
    shape = summary_tree.check(sample, fanout=FANOUT, entries=2_048)
    assert shape.ok, shape.problems
    assert (shape.leaves, shape.depth) == (len(leaves), 1) and len(leaves) > FANOUT
    assert "2,048 entries in" in tree["summaries/index.md"]

    creates = [op for op in ops(sample) if op.tool == "create"]
    written = sorted(p for p in tree if p.startswith("summaries/"))
    assert sorted(op.args["path"] for op in creates) == written
    assert len(creates) == len(tool_events(events, "create"))
    assert all(op.session == outcome.session.id and op.tool_use_id for op in creates)
    assert not [op for op in ops(sample) if op.tool in ("range", "peek")]

    stats = outcome.session.stats
    assert stats.peak_request < (sample / JOURNAL).stat().st_size / 4
    assert stats.peak_request <= 30_000 and stats.compactions > 0  # the budget, never more
    assert_within_caps(events)
    assert re.search(r"^1\. \[x\] Summarise the journal", tree["plan.md"], re.M)
    assert re.search(r"^2\. \[x\] Write the synthesis", tree["plan.md"], re.M)
    assert "memories/journal.md" in tree
    assert "2,048 entries" in outcome.text and "(all of them)" in outcome.text
    assert_clean(sample)


def test_a_synthesis_over_more_chunks_than_one_file_can_list_rolls_up_level_by_level(
        small: Path) -> None:
    events: list[LoopEvent] = []
    outcome = run(small, JournalPolicy(fanout=2), f"Summarise {JOURNAL}", events)
    assert outcome.status == "done", outcome.text
    shape = summary_tree.check(small, fanout=2, entries=SMALL)
    assert shape.ok, shape.problems
    assert shape.leaves > 2 ** 3 and shape.depth >= 3 and shape.widest == 2
    levels = {p.split("/")[1] for p in files(small) if p.startswith("summaries/level-")}
    assert levels == {f"level-{k}" for k in range(1, shape.depth + 1)}
    # Every period summary was written once, when it filled up or at the end: no file twice.
    paths = Counter(op.args["path"] for op in ops(small) if op.tool == "create")
    assert set(paths.values()) == {1} and shape.nodes == sum(1 for p in paths if "/level-" in p)
    assert_within_caps(events)
    with pytest.raises(BadArguments, match="at least two parts"):
        JournalPolicy(fanout=1)


def test_the_nested_form_writes_each_delegated_childs_value_as_a_chunk_summary(
        small: Path) -> None:
    # A budget that never compacts: the parent's conversation keeps every call it made.
    outcome = run(small, JournalPolicy(fanout=3, nested=True), f"Summarise {JOURNAL}",
                  budget=10**9)
    assert outcome.status == "done", outcome.text
    shape = summary_tree.check(small, fanout=3, entries=SMALL)
    assert shape.ok, shape.problems
    parent = outcome.session
    children = [s for s in sessions.listing(small) if s.parent_session == parent.id]
    assert children and all(c.status == "returned" and c.depth == 1 for c in children)
    tree = files(small)
    for child in children:  # each value became its window's chunk summary, word for word
        value = child.value
        leaf = f"summaries/{value['start'][:4]}/{value['start']}_{value['end']}.md"
        assert tree[leaf] == value["summary"] and value["entries"] == int(
            re.search(r"^Entries: (\d+)", value["summary"], re.M).group(1))  # type: ignore[union-attr]
    assert sum(c.value["entries"] for c in children) == SMALL
    # The parent never read the log: the range calls are all its children's.
    used = [b["name"] for m in parent.messages if m["role"] == "assistant"
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert "range" not in used and used.count("delegate") == len(children)
    assert all(c.stats.peak_request < 16_000 for c in children)  # one window each
    assert parent.stats.bytes_read < sum(c.stats.bytes_read for c in children)
    assert "read by a delegated agent of its own" in outcome.text
    assert_clean(small)


def test_the_nested_form_without_delegate_gives_up_and_says_why(small: Path) -> None:
    with gitspace.open(small, agent="runner") as ws:
        outcome = Loop(ws, JournalPolicy(nested=True), LoopOptions(max_depth=0)).start(
            f"Summarise {JOURNAL}")
    assert outcome.status == "gave_up" and "needs the delegate tool" in outcome.text
    assert not [op for op in ops(small) if op.session == outcome.session.id]


def dense_log(folder: Path) -> int:
    """137 entries a day for about a week, with a burst of 450 entries in one second (more
    than any window of whole minutes can hold); the count written."""
    entries = list(gen_worklog.generate(entries=800, per_day=137))
    burst = [{"ts": "2023-01-04T12:30:00+00:00", "text": f"alert {i} fired", "tags": ["incident"]}
             for i in range(450)]
    at = next(i for i, e in enumerate(entries) if e["ts"] >= burst[0]["ts"])
    entries[at:at] = burst
    folder.mkdir(parents=True)
    (folder / "dense.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return len(entries)


def test_a_dense_log_is_read_in_hours_and_minutes_and_a_burst_by_entry_count(sample: Path) -> None:
    total = dense_log(sample / "journal" / "dense-src")
    with gitspace.open(sample, agent="runner") as ws:
        call_ok(ws, "split_worklog", {"path": "journal/dense-src/dense.jsonl",
                                      "into": "journal/dense"})
    shutil.rmtree(sample / "journal" / "dense-src")  # never committed: the segments hold it all
    events: list[LoopEvent] = []
    # A folder named without its final slash, and the task's full stop after it.
    outcome = run(sample, JournalPolicy(), "Summarise journal/dense.", events)
    assert outcome.status == "done", outcome.text
    assert tool_events(events, "peek")[0].input == {"path": "journal/dense"}

    ranges = tool_events(events, "range")
    assert_narrowed(ranges)
    assert any(e.result and not e.result.ok for e in ranges[:-1])
    read = [e.input for e in ranges if e.result and e.result.ok]
    assert all("T" in r["end"] or "T" in r["start"] for r in read[1:])  # hours, not whole days
    pages = [r for r in read if "skip" in r]
    assert [p["skip"] for p in pages] == [0, 200, 400] and pages[0]["end"] == "2023-01-04T12:31"
    shape = summary_tree.check(sample, fanout=FANOUT, entries=total)
    assert shape.ok, shape.problems
    leaves = [p for p in files(sample) if re.search(r"_p\d+\.md$", p)]
    assert len(leaves) == 3
    assert f"{total:,} entries of journal/dense (all of them)" in outcome.text
    assert_within_caps(events)
    assert_clean(sample)


def test_the_task_names_its_log_as_a_file_or_a_folder_with_or_without_its_slash() -> None:
    assert _named_log("Summarise journal/worklog.jsonl, then write summaries/index.md") == JOURNAL
    assert _named_log("Summarise journal/worklog/ chunk by chunk") == "journal/worklog"
    assert _named_log("Summarise journal/worklog.") == "journal/worklog"
    assert _named_log("Summarise logs/ please") == "logs"
    assert _named_log("Read big.jsonl") == "big.jsonl"
    # What the policy writes is never its input; an absolute path is not a workspace path.
    assert _named_log("Write one file per chunk under summaries/, then summaries/index.md") == ""
    assert _named_log("Summarise /etc/passwd") == ""


CHILD = """
import os, signal, sys
import gitspace
from gitspace.agent.loop import Loop, LoopOptions
from gitspace.agent.policies.journal import JournalPolicy
root, kill_after, nested = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "nested"
done = []
def on_event(event):  # right after the op commits, before the session saves its result
    if event.kind == "tool" and event.result.op:
        done.append(event.result.op)
        if len(done) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
with gitspace.open(root, agent="runner") as ws:
    Loop(ws, JournalPolicy(fanout=2, nested=nested), LoopOptions(budget=20_000, keep_last=4, max_steps=2_000),
         on_event).start("Summarise journal/worklog.jsonl")
"""


@pytest.mark.parametrize("form", ["flat", "nested"])
def test_a_run_killed_mid_way_resumes_and_repeats_no_op(small: Path, form: str) -> None:
    child = subprocess.run([sys.executable, "-c", CHILD, str(small), "9", form],
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    before = ops(small)
    assert len([op for op in before if op.session]) == 9
    assert any("/level-1/" in str(op.args.get("path")) for op in before)

    listed = gitspace_cli(small, "sessions", "--json")
    [saved] = [s for s in json.loads(listed.stdout) if not s.get("parent_session")]
    children = len(json.loads(listed.stdout)) - 1
    resumed = gitspace_cli(small, "--agent", "runner", "run", "--resume", saved["session"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "(from the ledger)" in resumed.stdout  # the op of the killed step, read back

    after = ops(small)
    assert [op.op_id for op in after[:len(before)]] == [op.op_id for op in before]
    assert len({op.op_id for op in after}) == len(after)
    paths = Counter(op.args["path"] for op in after if op.tool == "create")
    assert set(paths.values()) == {1}, [p for p, n in paths.items() if n > 1]
    shape = summary_tree.check(small, fanout=2, entries=SMALL)
    assert shape.ok, shape.problems
    if form == "nested":  # no finished child ran again: one child per window, each returned
        after_sessions = json.loads(gitspace_cli(small, "sessions", "--json").stdout)
        kids = [s for s in after_sessions if s.get("parent_session") == saved["session"]]
        assert 0 < children < len(kids) and len({k["task"] for k in kids}) == len(kids)
        assert all(k["status"] == "returned" for k in kids)

    shown = gitspace_cli(small, "sessions", "show", saved["session"])
    assert re.search(r"stats +peak conversation [\d,]+ characters, largest tool result [\d,]+, "
                     r"[\d,]+ characters read, \d+ compaction\(s\), [1-9] recovered", shown.stdout), \
        shown.stdout
    assert_clean(small)
    git(small, "fsck", "--no-progress")
