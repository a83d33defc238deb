// gitspace ui: live updates. The server sends an event on /events whenever a branch or a tag
// moves, carrying a token of the refs' state; the page reloads its #live fragment (the URL in
// data-live) in place when the token differs from the one it was drawn at. No library.
(function () {
  "use strict";
  var box = document.getElementById("live");
  var dot = document.getElementById("live-dot");
  if (!window.EventSource) { return; }
  var shown = box ? box.dataset.state : null, wanted = shown, busy = false;

  function refresh(state) {
    if (!box || !box.dataset.live) { return; }
    wanted = state;
    if (busy || wanted === shown) { return; }
    busy = true;
    var target = wanted;
    fetch(box.dataset.live, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) {
          box.innerHTML = html;
          document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
        }
      })
      .catch(function () {})
      .then(function () {
        shown = target;  // a failed load is retried at the next event, not in a tight loop
        busy = false;
        if (wanted !== shown) { refresh(wanted); }
      });
  }

  var source = new EventSource("/events");
  // On (re)connect the refs may have moved since the page was drawn: "hello" carries the
  // current token, so the page catches up at once.
  source.addEventListener("hello", function (e) {
    if (dot) { dot.className = "on"; dot.title = "live: new ops appear without a reload"; }
    refresh(e.data);
  });
  source.addEventListener("refs", function (e) { refresh(e.data); });
  source.onerror = function () { if (dot) { dot.className = "off"; dot.title = "reconnecting"; } };
})();
