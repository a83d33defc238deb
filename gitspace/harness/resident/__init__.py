"""The resident recorder: one process per checkout that records a harness's hook calls, so that
a call pays no process start, no import and no repository open of its own.

Invariants:
- **The same recording.** A request is recorded exactly as ``gitspace hook NAME`` records it in
  its own process (``hook.run``: the one payload validator, the router, the one recorder), one
  request at a time, in the order they arrive. Every guarantee of a hook holds: one op per call
  with its tool-use id, outside edits as the person's, nothing of the person's touched.
- **Reached two ways.** Claude Code posts each event to ``http://127.0.0.1:PORT/hook/<name>``
  (its ``"type": "http"`` hooks, which ``hooks install`` writes with the checkout's port and
  secret); a harness with command hooks only runs ``gitspace hook NAME``, which hands the
  payload to the resident when one answers (``client.forward``) and records it itself when none
  does. Git's own ``post-commit``, ``post-rewrite`` and ``post-merge`` hooks ask it first too
  (``POST /git/<hook>``), so a commit's authorship note costs no process of Python while it
  runs (``provenance/githooks.py``).
- **Guarded.** It listens on 127.0.0.1 only; a request needs the ``Host`` of that address and
  port, no ``Origin`` of another, and ``Authorization: Bearer <secret>``, the secret the install
  wrote (``home.secret``: mode 600 in the checkout's git dir), compared in constant time
  (``http_guard.refusal``). Only ``POST /hook/<harness>`` of a known harness is served.
- **Nothing lost when it is not there.** Beside each http hook the install writes a command
  hook that does nothing when the resident is alive (a shell's ``kill -0`` of the pid it keeps)
  and otherwise records the call in its own process, as every hook did before, after what a
  killed resident left unrecorded (``journal``: a request is kept there from its arrival until
  it is recorded). A resident that finds the installed gitspace changed under it (an upgrade)
  records the request it was given, then stops; the next hook starts a new one. The person is
  told once per session, plainly, when a call was recorded without it.
- **Its life.** A hook starts it in the background when none runs (Claude Code's
  ``SessionStart``, or any call that found none); it stops after ``IDLE`` seconds without a
  request, and ``hooks uninstall`` stops it and removes everything it kept.
"""
