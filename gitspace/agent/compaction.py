"""The conversation's pairing rule, a checker for it, and compaction that never breaks it.

Invariant: every ``tool_use`` an assistant turn makes is answered by exactly one ``tool_result`` at the
start of the very next user turn, and no ``tool_result`` answers anything else. ``check`` reports each
way a conversation breaks that rule; ``compact`` and ``fit`` turn a valid conversation into a shorter
valid one. Turns are what the Messages API sees: consecutive messages of one role count as one turn.

Compaction keeps the goal (``messages[0]``) as it is and the newest messages from the start of an
assistant turn on, and folds everything between into one user message of plain-code summary lines
right after the goal (no model call: cheap, predictable, crude). Messages are shared with the input,
never modified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .model import Block, Message, blocks, result_text

SUMMARY_MARKER = "Summary of earlier steps (compacted; the files in the workspace hold the full record):"
MAX_SUMMARY_LINES = 40
_DROPPED = re.compile(r"^- \((\d+) earlier steps dropped")


@dataclass
class _Turn:
    role: str
    first: int  # index of its first message
    parts: list[tuple[int, Block]] = field(default_factory=list)  # (message index, block)


def check(messages: Sequence[Message], *, pending_ok: bool = False) -> list[str]:
    """Every way ``messages`` breaks the pairing rule, in message order; empty when it is valid.

    ``pending_ok`` accepts a last assistant turn whose tool_use blocks are not answered yet (the loop
    saves the conversation in the middle of a step).
    """
    if not messages:
        return ["the conversation is empty; it needs the user's goal as its first message"]
    problems: list[tuple[int, str]] = []
    turns = _turns(messages, problems)
    if turns and turns[0].role != "user":
        problems.append((turns[0].first, f"message {turns[0].first}: the conversation starts with an "
                                         "assistant turn; the first turn must be the user's goal"))
    seen: dict[str, int] = {}  # tool_use id -> message that made it
    expected: dict[str, int] = {}  # ids the previous assistant turn is waiting for -> its message
    for turn in turns:
        if turn.role == "assistant":
            expected = _read_assistant(turn, seen, problems)
        else:
            _read_user(turn, expected, seen, problems)
            expected = {}
    if not pending_ok:
        problems += [(i, f"message {i}: tool_use {tool_id} is never answered; the conversation ends "
                         "before its tool_result (pass pending_ok=True for a step still running)")
                     for tool_id, i in expected.items()]
    return [text for _, text in sorted(problems, key=lambda p: p[0])]


def _turns(messages: Sequence[Message], problems: list[tuple[int, str]]) -> list[_Turn]:
    """The API's view: consecutive messages of one role merged, each block tagged with its message."""
    turns: list[_Turn] = []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant"):
            problems.append((i, f"message {i}: role {role!r} is neither 'user' nor 'assistant'"))
            continue
        if not isinstance(content, str | list):
            problems.append((i, f"message {i}: content must be a string or a list of blocks, "
                                f"not {type(content).__name__}"))
            continue
        if not content:
            problems.append((i, f"message {i}: content is empty; the API rejects empty messages"))
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role, i))
        turns[-1].parts += [(i, b) for b in blocks(message)]
    return turns


def _read_assistant(turn: _Turn, seen: dict[str, int], problems: list[tuple[int, str]]) -> dict[str, int]:
    """The tool_use ids this turn makes (each needs a result next), noting misplaced or reused ones."""
    made: dict[str, int] = {}
    for i, block in turn.parts:
        kind = block.get("type")
        if kind == "tool_result":
            problems.append((i, f"message {i}: a tool_result sits in an assistant message; results belong "
                                "in the user turn after the tool_use"))
        elif kind == "tool_use":
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or not tool_id:
                problems.append((i, f"message {i}: a tool_use has no id"))
                continue
            if tool_id in seen:
                problems.append((i, f"message {i}: tool_use id {tool_id} is used twice "
                                    f"(first in message {seen[tool_id]}); every id must be unique"))
            seen.setdefault(tool_id, i)
            made.setdefault(tool_id, i)
    return made


def _read_user(turn: _Turn, expected: dict[str, int], seen: dict[str, int],
               problems: list[tuple[int, str]]) -> None:
    """Match this turn's leading tool_results against the ids the assistant turn before it made."""
    answered: set[str] = set()
    leading = True
    for i, block in turn.parts:
        kind = block.get("type")
        if kind != "tool_result":
            if kind == "tool_use":
                problems.append((i, f"message {i}: a tool_use sits in a user message; only the assistant "
                                    "calls tools"))
            leading = False
            continue
        result_id = block.get("tool_use_id")
        if result_id in answered:
            problems.append((i, f"message {i}: tool_result {result_id} answers its tool_use a second time; "
                                "send one result per tool_use"))
        elif isinstance(result_id, str) and result_id in expected:
            answered.add(result_id)
            if not leading:
                problems.append((i, f"message {i}: tool_result {result_id} comes after text; tool_results "
                                    "must come first in the user turn"))
        elif isinstance(result_id, str) and result_id in seen:
            problems.append((i, f"message {i}: tool_result {result_id} answers a tool_use from an earlier "
                                "turn, not from the assistant turn right before it"))
        else:
            problems.append((i, f"message {i}: tool_result {result_id} has no tool_use in the assistant "
                                "message before it"))
    problems += [(i, f"message {i}: tool_use {tool_id} has no tool_result in the user turn after it")
                 for tool_id, i in expected.items() if tool_id not in answered]


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary ``compact`` wrote."""
    first = blocks(message)[:1]
    return (message.get("role") == "user" and bool(first) and first[0].get("type") == "text"
            and str(first[0].get("text", "")).startswith(SUMMARY_MARKER))


def compact(messages: Sequence[Message], *, keep_last: int = 6, max_result_chars: int = 160) -> list[Message]:
    """The goal, one summary of the middle, and the last ``keep_last`` messages (or a few more).

    The kept tail starts where an assistant turn starts, so no tool_use is parted from its result;
    when that leaves nothing to fold, the messages come back unchanged (in a new list). An earlier
    summary right after the goal is folded into the new one line by line.
    """
    start = 2 if len(messages) > 1 and is_summary(messages[1]) else 1
    cut = max(start, len(messages) - max(keep_last, 0))
    while cut > start and not _starts_assistant_turn(messages, cut):
        cut -= 1
    if cut <= start:
        return list(messages)
    earlier = blocks(messages[1])[0]["text"].splitlines()[1:] if start == 2 else []
    lines = _summary_lines(messages[start:cut], max_result_chars)
    summary: Message = {"role": "user", "content": _bounded_summary(earlier, lines)}
    return [messages[0], summary, *messages[cut:]]


def _starts_assistant_turn(messages: Sequence[Message], i: int) -> bool:
    # A cut between two assistant messages would split one API turn, and with it a tool_use
    # from the results that answer it.
    return i >= len(messages) or (messages[i].get("role") == "assistant"
                                  and messages[i - 1].get("role") != "assistant")


def _summary_lines(middle: Sequence[Message], max_chars: int) -> list[str]:
    results = {b.get("tool_use_id"): b for m in middle if m.get("role") == "user"
               for b in blocks(m) if b.get("type") == "tool_result"}
    lines = []
    for message in middle:
        speaker = "you" if message.get("role") == "assistant" else "user"
        for block in blocks(message):
            kind = block.get("type")
            said = _clip(str(block.get("text", "")), max_chars) if kind == "text" else ""
            if said:
                lines.append(f"- {speaker} said: {said}")
            elif kind == "tool_use":
                lines.append(_call_line(block, results.get(block.get("id")), max_chars))
    return lines


def _call_line(use: Block, result: Block | None, max_chars: int) -> str:
    args = _clip(json.dumps(use.get("input", {}), ensure_ascii=False, sort_keys=True,
                            separators=(",", ":"), default=str), max_chars)
    if result is None:
        return f"- {use.get('name')}({args}) -> (no result)"
    error = " [error]" if result.get("is_error") else ""
    return f"- {use.get('name')}({args}) -> {_clip(result_text(result), max_chars)}{error}"


def _bounded_summary(earlier: list[str], new: list[str]) -> str:
    dropped = 0
    entries = []
    for line in earlier:
        match = _DROPPED.match(line)
        if match:
            dropped += int(match.group(1))
        else:
            entries.append(line)
    entries += new
    if len(entries) > MAX_SUMMARY_LINES:
        keep = MAX_SUMMARY_LINES - 1  # one line goes to the count of dropped steps
        dropped += len(entries) - keep
        entries = entries[-keep:]
    if dropped:
        entries.insert(0, f"- ({dropped} earlier steps dropped to keep this summary short)")
    return "\n".join([SUMMARY_MARKER, *entries])


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def size(messages: Sequence[Message]) -> int:
    """The measure budgets use: characters of the canonical JSON of ``messages``."""
    return len(json.dumps(list(messages), ensure_ascii=False, separators=(",", ":"), sort_keys=True))


def fit(messages: Sequence[Message], budget: int, *, keep_last: int = 6,
        max_result_chars: int = 160) -> list[Message]:
    """``messages`` if within ``budget``, else the first compaction that is, keeping fewer and fewer
    messages (down to 2); when none fits, the smallest one found."""
    best = list(messages)
    best_size = size(best)
    if best_size <= budget:
        return best
    for keep in [keep_last, *range(keep_last - 1, 1, -1)]:
        candidate = compact(messages, keep_last=keep, max_result_chars=max_result_chars)
        candidate_size = size(candidate)
        if candidate_size <= budget:
            return candidate
        if candidate_size < best_size:
            best, best_size = candidate, candidate_size
    return best
