"""Remove each rollback the fault tests protect, and check that a test then fails.

Each entry of ``REMOVALS`` names one rollback (a cleanup, a restore, a refusal to break a lock),
the exact code that does it, what is left when it is removed, and the tests that must notice.
The removal is made in a copy of the sources (``build/rollbacks/``), never in the work tree.
Prints one line per removal, the first failing test and its first assertion line, and exits 1
if a removal went unnoticed.

    python mutation/rollbacks.py [LABEL ...]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY = ROOT / "build" / "rollbacks"
T = "gitspace/core/transaction.py"
W = "gitspace/core/writer.py"
FAULTS = "tests/test_faults.py::test_a_failing_call_leaves_everything_as_before"

# label: (file, code that rolls back, what is left without it, pytest arguments)
REMOVALS: dict[str, tuple[str, str, str, list[str]]] = {
    "object tmp file": (
        "gitspace/storage/loose.py",
        "    except BaseException:\n        tmp.unlink(missing_ok=True)\n",
        "    except BaseException:\n        pass\n",
        [FAULTS, "-k", "create-object.write"]),
    "ref lock": (
        "gitspace/storage/refs.py",
        "        if not self.done:\n            self._lock.unlink(missing_ok=True)\n",
        "        pass\n",
        [FAULTS, "-k", "create-ref.update"]),
    "lock file (index, HEAD)": (
        "gitspace/storage/lockfile.py",
        "    except BaseException:\n        lock.unlink(missing_ok=True)\n        raise\n",
        "    except BaseException:\n        raise\n",
        [FAULTS, "-k", "create-index.store"]),
    "work-tree tmp file": (
        "gitspace/storage/files.py",
        "                os.close(fd)\n                _unlink_quietly(folder, tmp)\n                raise\n",
        "                os.close(fd)\n                raise\n", [FAULTS, "-k", "create-file.chmod"]),
    "a durable write whose folder flush failed after its rename": (
        "gitspace/storage/files.py",
        "                if changed is not None:\n                    changed.append(rel)",
        "                if changed is not None:\n                    pass",
        ["tests/test_faults.py", "-k", "failed_flush"]),
    "folders a failed write made": (
        "gitspace/storage/files.py",
        "                except BaseException:\n                    chain.prune(only_made=True)\n",
        "                except BaseException:\n", [FAULTS, "-k", "create-file.replace"]),
    "journal tmp file": (
        W, "        except BaseException:\n            tmp.unlink(missing_ok=True)  # (a full disk: nothing "
           "half-written stays behind)\n            raise\n",
        "        except BaseException:\n            raise\n",
        [FAULTS, "-k", "create-journal.write"]),
    "the writer's rollback": (
        W, "            self.roll_back(failure, written, change.before, paths, index,\n"
           "                           lambda: self._move_back(change, moved), back_to, change.index_file)\n",
        "", [FAULTS, "-k", "restore-file.replace"]),
    "rollback: files": (
        W, "            self.put_files({rel: before.get(rel) for rel in written}, lenient=True)\n"
           "            if index is not None:\n",
        "            if index is not None:\n", [f"{FAULTS}[restore-file.replace#3-EIO]"]),
    "rollback: index": (
        W, "            if index is not None:\n"
           "                self._restore_index(index, paths, commit, index_file)\n",
        "", [FAULTS, "-k", "create-journal.remove"]),
    "rollback: ref": (
        W, "            move_back()\n        except Exception as e:",
        "            pass\n        except Exception as e:", [FAULTS, "-k", "create-file.write"]),
    "rollback: HEAD": (
        W, "            branch, old, new = moved.head\n"
           "            self.repo.set_head(branch, change.who, new, old)\n",
        "            pass\n", [FAULTS, "-k", "switch-file.write"]),
    "rollback: refs moved together": (
        W, "            with self.repo.ref_transaction("
           "[(m.ref, m.old, m.new) for m in back], change.who, why):\n"
           "                pass\n",
        "            pass\n", [FAULTS, "-k", "sync-journal.remove"]),
    "rollback: journal": (
        W, "                hint=_hint(failure)) from failure\n        self.cancel_journal()\n",
        "                hint=_hint(failure)) from failure\n", [FAULTS, "-k", "create-file.write"]),
    "a journal that cannot be removed is neutralised": (
        W, "                self.journal_write({\"ref\": None, \"paths\": []})\n", "                pass\n",
        ["tests/test_faults.py::test_a_journal_that_cannot_be_removed_never_brings_a_failed_op_back"]),
    "recovery: a ref rolled forward": (
        W, "                self.repo.cas_ref(ref, old, new, COMMITTER, "
           "\"gitspace: finish interrupted op\")\n",
        "                pass\n", ["tests/core/test_writer.py", "-k", "cut_short"]),
    "branch: the branch of a failed switch": (
        "gitspace/tools/history.py",
        "            branches.delete_created(ws, who, created.name, start)  # the call fails whole\n", "",
        ["tests/test_faults.py::test_a_failed_switch_inside_branch_leaves_no_branch_behind"]),
    "a script's files": (
        T, "        except BaseException:\n            _take_back(ws, txn)\n            raise\n",
        "        except BaseException:\n            raise\n",
        [f"{FAULTS}[mutating script-object.write#1-EIO]"]),
    "the cached index of a failed store": (
        W, "                gitindex.forget(index_path)  # the cached index holds a change never stored\n",
        "", [FAULTS, "-k", "create-index.store"]),
    "refused writes are expected errors": (
        W, "busy), refused_writes():\n        yield\n", "busy):\n        yield\n",
        [f"{FAULTS}[create-file.write#1-EIO]"]),
    "recovery: a lock older than the journal": (
        W, "if lock.stat().st_mtime_ns >= since_ns:", "if True:",
        ["tests/test_faults.py::test_recovery_leaves_locks_older_than_the_journal"]),
    "recovery: a live git process's lock": (
        W, "    if not stale or lockfile.git_running_in({repo.root, repo.gitdir, repo.commondir}):\n",
        "    if not stale:\n",
        ["tests/test_faults.py::test_recovery_leaves_the_lock_of_a_live_git_process"]),
    "recovery: a lock that goes away within the wait": (
        W, "    deadline = time.monotonic() + wait\n", "    deadline = time.monotonic()\n",
        ["tests/test_faults.py::test_recovery_waits_for_a_lock_about_to_be_committed"]),
    "the index another writer replaced": (
        "gitspace/storage/gitindex.py", ", under_lock=unchanged,", ",",
        ["tests/storage/test_gitindex.py", "-k", "replaced"]),
}


def copy_tree() -> Path:
    shutil.rmtree(COPY, ignore_errors=True)
    for name in ("gitspace", "tests", "constraints", "sample_workspace"):
        shutil.copytree(ROOT / name, COPY / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", COPY / "pyproject.toml")
    return COPY


def first_failure(output: str) -> str:
    failed = re.search(r"^FAILED (\S+)", output, re.M)
    why = re.search(r"^E\s+(.+)$", output, re.M)
    if failed is None:
        return ""
    return f"{failed.group(1)}: {why.group(1)[:160] if why else '(no assertion line)'}"


def main() -> None:
    labels = sys.argv[1:] or list(REMOVALS)
    copy = copy_tree()
    env = {**{k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"},
           "PYTHONPATH": str(copy)}
    unnoticed = []
    for label in labels:
        rel, code, without, args = REMOVALS[label]  # (-k takes no spaces or '#': node ids do)
        path = copy / rel
        original = path.read_text()
        if original.count(code) != 1:  # (run one sweep at a time: the copy is shared)
            raise SystemExit(f"{label}: the code to remove is not in {rel} exactly once")
        path.write_text(original.replace(code, without))
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                                   "no:cacheprovider", "--basetemp", str(copy.parent / "rb-tmp"),
                                   *args], cwd=copy, env=env, capture_output=True, text=True)
        finally:
            path.write_text(original)
        failure = first_failure(proc.stdout)
        if proc.returncode not in (0, 1):  # no test ran, or pytest itself failed: not an answer
            unnoticed.append(label)
            print(f"BROKEN     {label}: pytest exited {proc.returncode}\n{proc.stdout[-600:]}")
        elif proc.returncode == 0 or not failure:
            unnoticed.append(label)
            print(f"UNNOTICED  {label}", flush=True)
        else:
            print(f"caught     {label}\n           {failure}", flush=True)
    if unnoticed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
