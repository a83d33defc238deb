"""Deterministic generator of realistic JSON Lines worklogs, for the sample and the benchmarks.

Invariant: the same (entries, years, seed) always yields the same entries, byte for byte, so the
sample workspace's ``journal/worklog.jsonl`` can be regenerated and reviewed as a diff.

The log reads like one engineer's journal: a few entries per working day between 08:00 and 18:30
UTC, weekends mostly empty, public holidays and two vacation weeks a year empty, about twenty tags,
and projects that start and end over time. With ``entries`` set, the log keeps the same density
and simply runs for as long as it takes (a million entries reach past the year 3000), so a
one-week slice of a huge log is as small as a one-week slice of the sample.

    python benchmarks/gen_worklog.py --out sample_workspace/journal/worklog.jsonl
    python benchmarks/gen_worklog.py --entries 1000000 --out /tmp/big.jsonl
    python benchmarks/gen_worklog.py --entries 100000 --per-day 137 --out /tmp/dense.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

SEED = 3
START = date(2023, 1, 2)  # a Monday
AREAS = ["backend", "frontend", "infra", "data"]
PROJECT_NAMES = ["atlas", "beacon", "comet", "delta", "ember", "fjord", "garnet", "harbor",
                 "iris", "juniper", "kestrel", "lumen"]
PEOPLE = ["Ana", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana"]
TOPICS = ["the retry policy", "schema migrations", "the billing export", "rate limits",
          "the search index", "login latency", "the on-call rota", "Q{q} goals", "error budgets",
          "the import pipeline", "feature flags", "the audit log", "caching headers"]
COMPONENTS = ["importer", "auth service", "report builder", "scheduler", "API gateway",
              "settings page", "notification worker", "CSV exporter", "session store"]
BUGS = ["an off-by-one in pagination", "a race when two jobs share a lock", "a timezone bug",
        "a memory leak", "a null dereference on empty input", "a flaky retry", "double billing"]

# (tags, template, takes a project). {area} is replaced by one of AREAS and added to the tags.
KINDS: list[tuple[list[str], str, bool]] = [
    (["review", "{area}"], "Reviewed PR #{n} for {project}: {topic}", True),
    (["bug", "{area}"], "Fixed {bug} in the {component}", True),
    (["meeting"], "Met {person} and {person2} about {topic}", False),
    (["deploy", "infra"], "Deployed {project} {version} to production", True),
    (["docs"], "Wrote docs for the {component}", True),
    (["research"], "Read up on {topic}; notes in notes/", False),
    (["planning"], "Planned next sprint for {project}", True),
    (["oncall"], "On-call handover: {n} pages, nothing outstanding", False),
    (["testing", "{area}"], "Added tests for the {component} ({n} new cases)", True),
    (["perf", "{area}"], "Profiled the {component}: p95 down {n}%", True),
    (["security"], "Rotated credentials and reviewed access for the {component}", False),
    (["design", "frontend"], "Sketched the new {component} screen with {person}", True),
    (["hiring", "interview"], "Interviewed a candidate for the {area} team", False),
    (["1on1"], "1:1 with {person}: {topic}", False),
    (["refactor", "{area}"], "Refactored the {component} to simplify {topic}", True),
    (["data"], "Backfilled {n}k rows for {project}", True),
    (["incident", "oncall"], "Incident: the {component} was down {n} min; postmortem done", False),
]
WEIGHTS = [14, 10, 9, 4, 4, 4, 4, 3, 6, 3, 2, 3, 2, 4, 5, 3, 1]


def _holidays(year: int) -> set[date]:
    return {date(year, 1, 1), date(year, 5, 1), date(year, 12, 24), date(year, 12, 25),
            date(year, 12, 26), date(year, 12, 31)}


class _Calendar:
    """Which days are worked and which projects are running; decided lazily, year by year."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.off: dict[int, set[date]] = {}
        self.projects: list[tuple[str, date, date]] = []  # running or about to start
        self.started = 0
        self.next_start = START

    def day_off(self, day: date) -> bool:
        if day.year not in self.off:
            days = _holidays(day.year)
            for week in (self.rng.randint(10, 20), self.rng.randint(28, 34)):  # spring, summer
                monday = date.fromisocalendar(day.year, week, 1)
                days.update(monday + timedelta(d) for d in range(7))
            self.off[day.year] = days
        return day in self.off[day.year]

    def active(self, day: date) -> list[str]:
        while self.next_start <= day:  # a new project every 3-5 months, lasting 5-11 months
            n, self.started = self.started, self.started + 1
            name = PROJECT_NAMES[n % len(PROJECT_NAMES)]
            name += f"-{n // len(PROJECT_NAMES) + 1}" if n >= len(PROJECT_NAMES) else ""
            end = self.next_start + timedelta(self.rng.randint(150, 330))
            self.projects.append((name, self.next_start, end))
            self.next_start += timedelta(self.rng.randint(90, 150))
        self.projects = [p for p in self.projects if p[2] > day] or self.projects[-1:]
        return [name for name, start, _ in self.projects if start <= day]


def _entry(rng: random.Random, when: datetime, projects: list[str]) -> dict:
    tags, template, wants_project = rng.choices(KINDS, WEIGHTS)[0]
    area = rng.choice(AREAS)
    person, person2 = rng.sample(PEOPLE, 2)
    project = rng.choice(projects) if wants_project and projects else None
    text = template.format(area=area, n=rng.randint(2, 99), project=project or "the team",
                           topic=rng.choice(TOPICS).format(q=(when.month - 1) // 3 + 1),
                           bug=rng.choice(BUGS), component=rng.choice(COMPONENTS),
                           person=person, person2=person2,
                           version=f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}")
    entry = {"ts": when.isoformat(), "text": text,
             "tags": list(dict.fromkeys(area if t == "{area}" else t for t in tags))}
    if project:
        entry["project"] = project
    return entry


NATURAL_PER_DAY = 2_048 / 730.5  # the sample's density: entries per calendar day


def generate(entries: int | None = None, years: int = 2, seed: int = SEED,
             per_day: float | None = None) -> Iterator[dict]:
    """Worklog entries in time order: ``years`` years of them, or exactly ``entries`` if given.

    ``per_day`` makes a denser log (137 entries a day puts 100,000 entries in two years): each
    worked day holds that many times more entries than the sample's, at whole seconds."""
    rng = random.Random(seed)
    scale = per_day / NATURAL_PER_DAY if per_day else None
    calendar = _Calendar(rng)
    last = START + timedelta(days=round(365.25 * years))
    produced = 0
    day = START
    while entries is not None or day < last:
        weekend = day.weekday() >= 5
        if calendar.day_off(day) or (weekend and rng.random() > 0.06):
            count = 0
        else:
            count = 1 if weekend else rng.choice([2, 3, 4, 4, 4, 5, 5, 6])
        if scale is None:
            seconds = [m * 60 for m in sorted(rng.sample(range(8 * 60, 18 * 60 + 30), count))]
        else:
            count = int(count * scale + rng.random())
            seconds = sorted(rng.sample(range(8 * 3600, 18 * 3600 + 1800), count))
        projects = calendar.active(day)
        for second in seconds:
            when = datetime(day.year, day.month, day.day, second // 3600, second // 60 % 60,
                            second % 60, tzinfo=UTC)
            yield _entry(rng, when, projects)
            produced += 1
            if produced == entries:
                return
        day += timedelta(days=1)


def write(path: Path, entries: int | None = None, years: int = 2, seed: int = SEED,
          per_day: float | None = None) -> int:
    """Write a worklog to ``path`` (one JSON object per line); return how many entries."""
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for entry in generate(entries, years, seed, per_day):
            out.write(json.dumps(entry, separators=(", ", ": ")) + "\n")
            n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=None, help="exact count (default: by years)")
    parser.add_argument("--years", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--per-day", type=float, default=None,
                        help="entries per calendar day (default: the sample's, about 2.8)")
    parser.add_argument("--out", type=Path, required=True)
    ns = parser.parse_args()
    n = write(ns.out, ns.entries, ns.years, ns.seed, ns.per_day)
    print(f"wrote {n:,} entries to {ns.out}")


if __name__ == "__main__":
    main()
